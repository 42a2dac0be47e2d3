"""Where runs live: evolve(), creating and forking runs, the queue, workers and dispatch."""
