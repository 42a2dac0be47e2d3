"""The engine keeps its history and pool up to date as the run goes and reads examples by id
(issue 32): seeded scripted runs still do exactly what they did when every iteration read the
whole run again and every example was read up front (``seeded_runs.json``, made on that code by
``python -m tests.engine.seeded_runs``): the same trials, proposals, decisions and pool, with
one lane and three, the rules operator and the demo selector, and a person's rejections."""

from __future__ import annotations

import json

import pytest

from tests.engine.seeded_runs import GOLDEN, SCENARIOS, seeded_run


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_seeded_run_does_what_it_did_before_the_engine_kept_its_history(name):
    assert seeded_run(name) == json.loads(GOLDEN.read_text())[name]
