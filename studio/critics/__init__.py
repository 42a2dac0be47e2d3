"""Critics: the Critic seam and every adapter to it (ADK critic agents, evaluators, judges),
feedback parsing, and judge-human agreement.

The ADK critic-agent API (``CriticScorer``, ``SimpleCriticOutput``, ``CriticOutput``...) is
re-exported here under the names gepa-adk users know.
"""

from studio.critics.agent import *  # noqa: F403
from studio.critics.agent import __all__  # noqa: F401
