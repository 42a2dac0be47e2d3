"""Where a person steers: gates and their evidence, overrides' history, align labels, Stop and
Pause."""
