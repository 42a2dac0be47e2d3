"""``python -m tests.ui.streamlit_warm run studio/app.py …``: Streamlit's own command line, in a
process that has first imported the heavy libraries the studio's first page needs (ADK,
LiteLLM, the engine). Not the components: their caches must be made in Streamlit's runtime.

Why: a fresh ``streamlit run`` answers its health check at once and imports all that during
the first page's script run, so the first test to open the page paid a cold start (half a
minute on a loaded two-core machine) inside its own 30 s wait for the page. Here the server
answers its health check only once it is warm, and the wait for a healthy server
(:func:`tests.ui.browser.studio_server`) is the one that covers the imports, with a deadline
that says so."""

from __future__ import annotations

import importlib
import sys

WARM = ("google.adk.agents", "google.adk.runners", "google.adk.models.lite_llm", "litellm",
        "studio.engine.hosting.build", "studio.projects.workspace")


def warm_up() -> None:
    for module in WARM:
        importlib.import_module(module)


if __name__ == "__main__":
    warm_up()
    from streamlit.web import cli

    sys.exit(cli.main(prog_name="streamlit"))
