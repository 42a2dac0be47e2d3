"""GEPA's proposers: reflection (model or rules), demos, merge, the trial records they read,
skipping a perfect parent."""
