"""The haiku writer's instruction: what the studio evolves and `studio apply` writes back."""

WRITER_PROMPT = """Write a haiku about the given topic."""
