"""The browser tier: tests that drive Debian's Chromium against a real studio server (seconds
each). Everything in this folder is marked ``browser`` by tests/conftest.py, so a plain
``pytest`` skips it and ``pytest --all`` or ``-m browser`` (CI) runs it; the harness is
tests/ui/browser.py."""
