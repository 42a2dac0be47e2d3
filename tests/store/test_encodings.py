"""Characters no database stores (a lone surrogate, NUL) in model replies and dataset cells: a
run on SQLite and on PostgreSQL stores them with a visible marker and never fails for them."""

from __future__ import annotations

import asyncio
import json
import math
import os

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.model.records import EventKind, RunStatus
from studio.store import open_store
from studio.store.schema import NUL_MARKER
from tests.helpers import demo_spec, empty_postgres_store, trainset

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")

LONE_SURROGATE = json.loads('"split emoji \\ud83d here"')
NUL_REPLY = "before\x00after"


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request, tmp_path):
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path}/studio.db", cached=False)
    elif not PG_URL:
        pytest.skip("no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")
    else:
        store = empty_postgres_store(PG_URL)
    yield store
    store.close()


def run_with_writer_reply(store, script, reply: str, rows=None):
    writer = script(reply)
    spec = demo_spec()
    spec = spec.model_copy(update={"agent": spec.agent.model_copy(update={"model": writer})})
    run = create_run(store, spec=spec, trainset=rows or trainset(2),
                     config=EvolutionConfig(max_iterations=1, seed=1))
    reason = asyncio.run(build_engine(store, run.id).run())
    return run, reason


@pytest.mark.parametrize("reply,marker", [(LONE_SURROGATE, "\ufffd"), (NUL_REPLY, NUL_MARKER),
                                          ("\x00" * 50, NUL_MARKER),
                                          ("\udfff\ud800" + "ok", "\ufffd")])
def test_a_reply_no_database_can_encode_is_stored_with_a_marker(any_store, script, reply, marker):
    run, _reason = run_with_writer_reply(any_store, script, reply)
    assert any_store.get_run(run.id).status is RunStatus.COMPLETED
    outputs = [trial.output for trial in any_store.trials(run.id)]
    assert outputs and all(marker in output for output in outputs)
    assert all("\x00" not in o and "\ud83d" not in o for o in outputs)


def test_a_valid_emoji_is_kept_as_is(any_store, script):
    run, _reason = run_with_writer_reply(any_store, script, "whole emoji \U0001F600")
    assert all(t.output == "whole emoji \U0001F600" for t in any_store.trials(run.id))


def test_a_dataset_cell_with_nul_or_a_lone_surrogate_is_stored_with_a_marker(any_store, script):
    rows = [{"topic": "nul\x00cell"}, {"topic": "half \ud83d emoji", "\x00key": "v"}]
    run, _reason = run_with_writer_reply(any_store, script, "a haiku", rows=rows)
    assert any_store.get_run(run.id).status is RunStatus.COMPLETED
    stored = [e.data for e in any_store.examples(run.id)]
    assert stored[0]["topic"] == f"nul{NUL_MARKER}cell"
    assert stored[1]["topic"] == "half \ufffd emoji" and stored[1][f"{NUL_MARKER}key"] == "v"


def test_a_run_name_and_error_text_with_bad_characters_are_stored(any_store):
    from studio.model.records import Run

    run = any_store.create_run(Run(id="r-bad", name="name \ud83d\x00"))
    any_store.update_run(run.id, error="boom \x00 \udc80")
    stored = any_store.get_run(run.id)
    assert stored.name == f"name \ufffd{NUL_MARKER}" and "\x00" not in stored.error


def test_a_trace_event_and_checkpoint_keep_clean_values_and_mend_the_rest(any_store, script):
    """JSON values are checked in one pass of the C encoder and walked only when it finds
    something (a NUL, a surrogate escape, a non-finite number): whatever the path, a trace, an
    event's payload and a checkpoint are stored with markers and nulls where needed, and the
    rest exactly as written (an emoji, a backslash before 'ud', ordinary text)."""
    run, _reason = run_with_writer_reply(any_store, script, "fine")
    trial = any_store.trials(run.id)[0]
    trace = {"events": [{"text": NUL_REPLY, "k\x00": LONE_SURROGATE},
                        {"emoji": "\U0001F600", "escaped": "a \\ud83d b", "plain": "x"}],
             "usage": {"latency": math.nan, "cost": math.inf, "tokens": [1, 2.5]}}
    stored = any_store.add_trials([trial.model_copy(update={"id": None, "worker": None,
                                                            "trace": trace})])[0]
    back = any_store.get_trial(stored.id).trace
    first, second = back["events"]
    assert first == {"text": "before" + NUL_MARKER + "after",
                     "k" + NUL_MARKER: "split emoji \ufffd here"}
    assert second == {"emoji": "\U0001F600", "escaped": "a \\ud83d b", "plain": "x"}
    assert back["usage"] == {"latency": None, "cost": None, "tokens": [1, 2.5]}

    any_store.add_event(run.id, EventKind.RUN_STARTED, 0, {"bad": -math.inf, "ok": [1.5]})
    payload = any_store.latest_event(run.id, EventKind.RUN_STARTED).payload
    assert payload == {"bad": None, "ok": [1.5]}
    any_store.save_checkpoint(run.id, 3, {"best": math.nan, "rng": (1, [2, 3])})
    assert any_store.load_checkpoint(run.id) == (3, {"best": None, "rng": [1, [2, 3]]})
