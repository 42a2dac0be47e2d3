"""Run the shared harness's ``side_by_side.py`` for the studio with the studio's stack imported
before the clock starts, as the harness does for every peer.

The harness's ``preload()`` imports ``studio`` alone, and ``import studio`` is lazy (the CLI and
the UI stay quick to start): its engine, store and evaluators were imported by the first
``evolve()`` call, inside the timed region, ~0.4 s of CPU that gepa-adk (``import gepa_adk``
loads everything) pays before it. That is a one-off per process, not CPU per model call, so
``bench_peers.py`` runs the studio through here; ``--import-in-clock`` there runs the harness
as it is, to show the difference.

    PYTHONPATH=<harness>:<studio checkout> python bench/peers_studio.py   # env as the harness's
"""

from __future__ import annotations

import os
import runpy
import sys

if __name__ == "__main__":
    harness = os.environ["STUDIO_PEERS_DIR"]
    import studio.engine.api  # noqa: F401  (the stack `import gepa_adk` loads for gepa-adk)

    sys.argv = [os.path.join(harness, "side_by_side.py")]
    runpy.run_path(sys.argv[0], run_name="__main__")
