"""Time of ``Store.add_trial`` with a 30 KB trace, the hottest step of recording a trial.

Trials used to be redacted on every insert (``redact_data`` over the whole trial: ~9 ms per
30 KB trace); they are now stored raw (the loop reads them) and redacted where shown. Run it
against two trees to compare: ``PYTHONPATH=<tree> python bench/bench_add_trial.py``.
"""

from __future__ import annotations

import statistics
import tempfile
import time

from studio.engine import EvolutionConfig, create_run
from studio.model.feedback import Feedback
from studio.model.records import Split, Trial, TrialPhase
from studio.store import open_store
from tests.helpers import demo_spec, trainset

TRIALS = 300


def trace_of(kilobytes: int) -> dict:
    """A trace shaped like ADK's: many events, each with some text (~150 characters)."""
    events = [{"author": "writer", "kind": "text", "text": f"step {i}: " + "lorem ipsum " * 12}
              for i in range(kilobytes * 1024 // 170)]
    return {"events": events, "state_delta": {"k": "v"}}


def main() -> None:
    folder = tempfile.mkdtemp(prefix="bench-add-trial-")
    store = open_store(f"sqlite:///{folder}/s.db", cached=False)
    run = create_run(store, spec=demo_spec(), trainset=trainset(3),
                     config=EvolutionConfig(max_iterations=1))
    example = store.examples(run.id)[0]
    candidate_id = _seed_candidate(store, run.id)
    trace = trace_of(30)
    seconds = []
    for i in range(TRIALS):
        trial = Trial(run_id=run.id, candidate_id=candidate_id, example_id=example.id,
                      split=Split.TRAIN, example_index=i, phase=TrialPhase.PARENT,
                      input_text="a topic", output="a haiku " * 20,
                      feedback=Feedback(score=0.5, feedback_text="fine " * 40), trace=trace)
        start = time.perf_counter()
        store.add_trial(trial)
        seconds.append(time.perf_counter() - start)
    ms = sorted(s * 1000 for s in seconds)
    print(f"add_trial, 30 KB trace, {TRIALS} trials: median {statistics.median(ms):.2f} ms, "
          f"p90 {ms[int(0.9 * len(ms))]:.2f} ms")


def _seed_candidate(store, run_id: str) -> int:
    from studio.model.records import Candidate

    found = store.candidates(run_id)
    if found:
        return found[0].id
    return store.add_candidate(Candidate(run_id=run_id, index=0, components={"instruction": "x"},
                                         content_hash="x")).id


if __name__ == "__main__":
    main()
