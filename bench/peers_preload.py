"""Run the shared harness's ``side_by_side.py`` for any tool with the modules every ADK/LiteLLM
tool imports lazily on its first model call imported before the clock starts: the same list for
every tool, then the tool's own stack.

Why. The harness's ``preload()`` imports each tool's top-level package; everything a first model
call imports lazily is then inside the timed region: ADK 2.13's ``Runner`` imports its graph
workflow (``_agent_router``) and ``_workflow_graph_utils.build_node`` imports
``remote_a2a_agent`` (with a2a-sdk: grpc and protobuf), LiteLLM's ``completion()`` loads
tiktoken's encoding, its provider lookup imports a dozen ``litellm.llms`` modules, and so on.
That is a one-off of each process (0.3-0.8 s of CPU), not a cost of any model call, and it is
divided by few calls (62-154 in the harness's worlds), so it decides "CPU per model call" more
than the per-call work does. Each tool here gets the same list (an import a venv cannot do, such
as ``remote_a2a_agent`` without a2a-sdk, is skipped: that tool pays what its environment makes
it pay, as it would in use), so the comparison stays fair. ``bench_peers.py --import-in-clock``
runs the harness as it is, for every tool.

Runs in the peers' Python 3.12 environments too: nothing of the studio's is imported unless
``TOOL=studio``.

    PYTHONPATH=<harness>[:<studio>] TOOL=<tool> python bench/peers_preload.py   # + the world
"""

from __future__ import annotations

import os
import runpy
import sys

COMMON = (
    # ADK: what the Runner, its flows and the first LlmAgent run import on first use.
    "google.adk.runners",
    "google.adk.agents._agent_router",
    "google.adk.workflow._workflow",
    "google.adk.workflow._llm_agent_wrapper",
    "google.adk.workflow._node_runner_utils",
    "google.adk.agents.remote_a2a_agent",  # needs a2a-sdk (the studio's venv pins google-adk[a2a])
    "google.adk.auth.auth_preprocessor",
    "google.adk.flows.llm_flows.auto_flow",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.tools.agent_tool",
    "google.adk.memory.in_memory_memory_service",
    "google.adk.sessions.in_memory_session_service",
    "google.adk.artifacts.in_memory_artifact_service",
    "google.adk.errors.input_validation_error",
    "google.adk.models.google_llm",
    "google.adk.apps.compaction",
    # LiteLLM: the tokenizer completion() loads, and the provider modules its lookups import.
    "litellm.litellm_core_utils.default_encoding",
    "litellm.llms.litellm_proxy.chat.transformation",
    "litellm.llms.fal_ai.chat.transformation",
    "litellm.llms.fal_ai.image_generation",
    "litellm.llms.edenai.chat.transformation",
    "litellm.llms.vertex_ai.vertex_ai_partner_models.anthropic.transformation",
    "litellm.llms.openai.chat.gpt_audio_transformation",
    "litellm.llms.openai_like.dynamic_config",
    "litellm.proxy._types",
    "litellm.proxy.openai_files_endpoints.common_utils",
)
"""Found with the harness's runs of gepa-adk, ADK's optimizer and the studio: the modules loaded
after the clock starts that more than one tool loads (``sys.modules`` before and after)."""

OWN = {
    "gepa-adk": ("gepa_adk",),
    "gepa": ("gepa", "gepa.api", "gepa.lm", "gepa.visualization"),
    "adk-optimize": ("gepa.api", "gepa.lm", "gepa.visualization",
                     "google.adk.optimization.gepa_root_agent_optimizer"),
    "studio": ("studio.engine.hosting.api", "studio.runtime.providers.local",
               "studio.runtime.providers.scripted", "studio.runtime.providers.demo",
               "studio.runtime.providers.strict", "studio.runtime.litellm_logging",
               "studio.runtime.watch", "sqlalchemy.dialects.sqlite.pysqlite"),
}
"""Each tool's own stack: what ``import gepa_adk`` loads at once, the studio loads on its first
``evolve()`` (its package is lazy so the CLI and UI start quickly; the SQLite dialect is what
opening its store imports); ``gepa.lm`` and ``gepa.visualization`` are what GEPA's
``optimize()`` imports."""


def preload(tool: str) -> list[str]:
    """Import the common list, then ``tool``'s own; the names that could not be imported."""
    # The harness sets this before importing litellm; litellm imported first would fetch the
    # model cost map from the network (and retry for seconds) instead of reading its copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    skipped = []
    for name in (*COMMON, *OWN.get(tool, ())):
        try:
            __import__(name)
        except ImportError:
            skipped.append(name)
    return skipped


if __name__ == "__main__":
    skipped = preload(os.environ.get("TOOL", "studio"))
    if skipped:
        print(f"peers_preload: not importable here: {', '.join(skipped)}", file=sys.stderr)
    sys.argv = [os.path.join(os.environ["STUDIO_PEERS_DIR"], "side_by_side.py")]
    runpy.run_path(sys.argv[0], run_name="__main__")
