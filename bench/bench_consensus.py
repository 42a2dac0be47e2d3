"""What the people's consensus costs the store's effective-score SQL: a whole run's trials read
with the effective score as it is now (an owner's adjudication, else each reviewer's latest
score combined, :mod:`studio.model.consensus`) against the earlier rule (the latest corrected
score), interleaved on one SQLite store: 20,000 trials, every 50th corrected, a third of those
by two reviewers. Prints the median of each, in milliseconds, and their ratio.

    python bench/bench_consensus.py [--trials 20000] [--rounds 21]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime

from sqlalchemy import func, insert, select

import studio.store.schema as t
from studio.model.records import Candidate, Run, Split
from studio.store import open_store
from studio.store.repos.scores import effective_score


def latest_score():
    """The rule before several reviewers: the latest active corrected score, else the judge's."""
    o = t.overrides.c
    human = (select(o.score).where(o.trial_id == t.trials.c.id, o.undone_at.is_(None),
                                   o.score.is_not(None))
             .order_by(o.id.desc()).limit(1).scalar_subquery())
    return func.coalesce(human, t.trials.c.score)


def seeded(url: str, count: int) -> str:
    store = open_store(url, cached=False)
    run = store.create_run(Run(id="bench", name="bench", spec={"critic": {"name": "c"}}))
    example = store.add_examples(run.id, Split.TRAIN, [{"topic": "a"}])[0]
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0, content_hash="h",
                                              components={"instruction": "x"}))
    now = datetime.now(UTC)
    trial = {"run_id": run.id, "candidate_id": candidate.id, "example_id": example.id,
             "split": "train", "example_index": 0, "iteration": 0, "phase": "valset",
             "input_text": "x", "output": "y", "score": 0.5, "feedback": {}, "trace": {},
             "latency_s": 0.0, "tokens": 0, "created_at": now, "cost_usd": 0.0}
    with store.engine.begin() as c:
        c.execute(insert(t.trials), [trial] * count)
        ids = list(c.execute(select(t.trials.c.id)).scalars())
        labels = []
        for n, trial_id in enumerate(ids[::50]):
            two = n % 3 == 0
            labels.append({"trial_id": trial_id, "run_id": run.id, "score": 0.9, "author": "a",
                           "reviewer": "a" if two else None, "created_at": now})
            if two:
                labels.append({"trial_id": trial_id, "run_id": run.id, "score": 0.1,
                               "author": "b", "reviewer": "b", "created_at": now})
        c.execute(insert(t.overrides), labels)
    store.close()
    return run.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.db"
        run_id = seeded(url, args.trials)
        store = open_store(url, cached=False)
        times: dict[str, list[float]] = {"latest": [], "consensus": []}
        with store.engine.connect() as c:
            for _ in range(args.rounds):
                for name, score in (("latest", latest_score()), ("consensus", effective_score())):
                    start = time.perf_counter()
                    c.execute(select(t.trials.c.id, score).where(t.trials.c.run_id == run_id)).all()
                    times[name].append(time.perf_counter() - start)
        store.close()
    medians = {name: statistics.median(found) * 1000 for name, found in times.items()}
    print(f"{args.trials:,} trials: latest-score rule {medians['latest']:.0f} ms, consensus rule "
          f"{medians['consensus']:.0f} ms (x{medians['consensus'] / medians['latest']:.2f}), "
          f"medians of {args.rounds} interleaved rounds")


if __name__ == "__main__":
    main()
