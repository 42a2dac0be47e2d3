"""Child process for the crash test: start a run and keep working until killed."""

from __future__ import annotations

import sys

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.worker import get_manager
from studio.store import open_store
from tests.helpers import demo_spec, trainset

url, review = sys.argv[1], sys.argv[2]
store = open_store(url)
run = create_run(store, spec=demo_spec("scripted/demo@40ms"), trainset=trainset(5),
                 valset=[{"topic": "harbor fog"}, {"topic": "desert wind"}],
                 config=EvolutionConfig(max_iterations=5, review=review, seed=3,
                                        max_concurrency=2))
print(run.id, flush=True)
get_manager(store).start(build_engine(store, run.id)).wait()  # the test kills it before the end
