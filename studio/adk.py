"""Import this module in an ADK agent folder to let ADK's own ``adk run``, ``adk web`` and
``adk eval`` resolve the studio's model names, so an agent written ::

    import studio.adk  # noqa: F401  (ADK then knows scripted/... and local/...)

    root_agent = LlmAgent(name="writer", model="scripted/demo", instruction=...)

runs the same under ADK as under ``studio run`` (which needs no import: it registers them
itself). ``scripted/<name>`` is the studio's deterministic scripted model, ``local/smollm2`` the
embedded offline one; both are LiteLLM custom providers, registered with ADK's ``LLMRegistry``
(:mod:`studio.runtime.adk_models`).
"""

from studio.runtime.adk_models import register_studio_models_with_adk

register_studio_models_with_adk()
