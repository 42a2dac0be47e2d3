"""GEPA's strategies: which parent, which minibatch, the Pareto front and pool, a proposal's
evidence, when to stop."""
