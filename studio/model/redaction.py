"""Keep API keys out of everything the studio writes (store, exports, logs, UI)."""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(API_KEY|_TOKEN|_SECRET|PASSWORD)$|^(AWS_SECRET|AZURE_.*KEY)")
_MIN_SECRET_LENGTH = 8


def secret_values() -> list[str]:
    """Values of environment variables whose names say they are secrets."""
    return [
        value
        for name, value in os.environ.items()
        if _SECRET_NAME.search(name) and value and len(value) >= _MIN_SECRET_LENGTH
    ]


def redact(text: str) -> str:
    """Replace every secret value from the environment, and anything shaped like a key."""
    for value in secret_values():
        text = text.replace(value, "***")
    return re.sub(r"\b(sk|AIza|xai|gsk)[-_A-Za-z0-9]{16,}", r"\1-***", text)


def mask(value: str | None) -> str:
    """Show that a key is set without revealing it: ``sk-...4f2a``."""
    if not value:
        return "not set"
    return f"{value[:3]}...{value[-4:]}" if len(value) > 12 else "set"
