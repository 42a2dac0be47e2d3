"""GEPA's engine: the loop, its lanes in flight, the plan of each iteration and its progress."""
