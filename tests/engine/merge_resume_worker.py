"""Child process for the merge crash test: the merge scenario in review mode, until killed."""

from __future__ import annotations

import sys

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.worker import get_manager
from studio.runtime.providers.scripted import register_script
from studio.store import open_store
from tests.engine import merge_world as world

register_script(world.WORLD, world.reply)
store = open_store(sys.argv[1])
run = create_run(store, spec=world.spec(), trainset=world.TRAINSET,
                 config=EvolutionConfig(**world.config(review="review")))
print(run.id, flush=True)
get_manager(store).start(build_engine(store, run.id)).wait()  # the test kills it before the end
