"""Judging candidates on examples: batches, prefetched validation, worker processes, the held-out
test set and its guard."""
