"""What one run is made of: its context, events, the agent's evolvable texts, examples, state and
what it tried."""
