"""Records, specs, configuration and typed errors: the words every other layer speaks."""
