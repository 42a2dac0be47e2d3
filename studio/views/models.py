"""What a run runs on, in words for the Run page and the CLI: the models that replace an agent
folder's own (``running on scripted/demo (the folder says gemini-2.5-flash)``), and a notice when
the embedded model writes the proposals."""

from __future__ import annotations

from studio.model.agent_models import running_note
from studio.model.records import RunSpec

EMBEDDED_PREFIX = "local/"


def model_notes(spec: RunSpec) -> list[str]:
    """The lines to show before a run's progress (none for a run that needs no note)."""
    owner = "the folder" if spec.agent_folder else "its code"
    notes = [note] if (note := running_note(spec.models, spec.code_models, owner=owner)) else []
    reflection = spec.reflection.model or ""
    if reflection.startswith(EMBEDDED_PREFIX):
        notes.append(f"proposals are written by {reflection}, the embedded 135M model that runs "
                     "offline: it shows the machinery, not a gain. Give the reflection a capable "
                     "model (--reflection-model, or reflection.model in the project) to improve "
                     "the agent")
    return notes
