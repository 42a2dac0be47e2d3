"""Workers opening a new PostgreSQL database together (after a fresh install or an upgrade):
schema creation runs under an advisory lock, so every one of them opens the store, the schema is
created once, and nobody sees "relation already exists" (issue 20). Real processes, released
together once each has imported the studio, so their ``CREATE TABLE``s would otherwise race."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from studio.store import open_store
from studio.store import schema as tables
from studio.store.connection import resolve_url
from tests.helpers import wait_until

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not PG_URL and os.environ.get("STUDIO_REQUIRE_POSTGRES") != "1",
    reason="no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")]

OPENER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from studio.store import open_store
    ready, go = Path(sys.argv[1]), Path(sys.argv[2])
    ready.touch()
    while not go.exists():
        time.sleep(0.001)
    store = open_store(os.environ["STUDIO_TEST_PG_URL"], cached=False)
    print(len(store.list_runs()))
    store.close()
""")


def test_workers_opening_a_new_database_together_all_open_it(tmp_path):
    if not PG_URL:
        pytest.fail("STUDIO_REQUIRE_POSTGRES=1 but STUDIO_TEST_PG_URL is not set")
    engine = create_engine(resolve_url(PG_URL))
    tables.metadata.drop_all(engine)
    engine.dispose()
    go = tmp_path / "go"
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(tmp_path / f"ready{i}"),
                                 str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for i in range(4)]
    wait_until(lambda: all((tmp_path / f"ready{i}").exists() for i in range(4)), timeout=120,
               message="every opener to have imported the studio")
    go.touch()
    results = [(p.wait(timeout=120), *p.communicate()) for p in openers]
    assert [(code, out.strip()) for code, out, _ in results] == [(0, "0")] * 4, results
    store = open_store(PG_URL, cached=False)
    with store.engine.connect() as c:
        assert c.execute(text("SELECT value FROM meta WHERE key = 'schema_version'"))\
            .scalars().all() == [str(tables.SCHEMA_VERSION)]
    store.close()


def test_workers_opening_an_older_database_together_upgrade_it_once(tmp_path):
    """The upgrade, not the creation: four processes open a version-7 database at once; the
    advisory lock lets one run the v7->v8 step and the others find it done."""
    if not PG_URL:
        pytest.fail("STUDIO_REQUIRE_POSTGRES=1 but STUDIO_TEST_PG_URL is not set")
    engine = create_engine(resolve_url(PG_URL))
    tables.metadata.drop_all(engine)
    engine.dispose()
    open_store(PG_URL, cached=False).close()
    engine = create_engine(resolve_url(PG_URL))
    with engine.begin() as c:  # as version 7 left it
        c.execute(text("ALTER TABLE trials DROP COLUMN cost_usd"))
        c.execute(text("ALTER TABLE runs DROP COLUMN build_tries, DROP COLUMN build_error, "
                       "DROP COLUMN build_tries_max"))
        c.execute(text("UPDATE meta SET value = '7' WHERE key = 'schema_version'"))
    engine.dispose()
    go = tmp_path / "go"
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(tmp_path / f"ready{i}"),
                                 str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for i in range(4)]
    wait_until(lambda: all((tmp_path / f"ready{i}").exists() for i in range(4)), timeout=120,
               message="every opener to have imported the studio")
    go.touch()
    results = [(p.wait(timeout=120), *p.communicate()) for p in openers]
    assert [(code, out.strip()) for code, out, _ in results] == [(0, "0")] * 4, results
    store = open_store(PG_URL, cached=False)
    with store.engine.connect() as c:
        assert c.execute(text("SELECT value FROM meta WHERE key = 'schema_version'"))\
            .scalars().all() == [str(tables.SCHEMA_VERSION)]
        assert c.execute(text("SELECT count(*) FROM information_schema.columns WHERE "
                              "table_name = 'trials' AND column_name = 'cost_usd'")).scalar() == 1
    store.close()
