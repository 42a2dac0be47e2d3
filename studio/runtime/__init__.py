"""Running agents: the ADK executor with limits and traces, and the LiteLLM providers."""
