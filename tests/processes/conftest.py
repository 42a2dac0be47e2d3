"""The processes tier: tests that start real processes, kill them or restart servers (seconds
each). Everything in this folder is marked ``slow`` by tests/conftest.py, so a plain ``pytest``
skips it and ``pytest --all`` (CI) runs it."""

from tests.engine.conftest import database_url  # noqa: F401 (a fixture: SQLite and PostgreSQL)
