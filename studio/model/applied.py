"""What a run records when one of its candidates is written back into the agent's source
(``studio apply``, Compare's *Apply to the folder*): which candidate, where, when and by whom.

Stored as the run's ``applied`` event (:attr:`studio.model.records.EventKind.APPLIED`), this
record its payload, read back through the same model."""

from __future__ import annotations

from datetime import datetime
from pathlib import PurePath

from pydantic import BaseModel, Field

from studio.model.records import RunEvent, utcnow


class Applied(BaseModel):
    """One write-back of a candidate into an agent folder."""

    candidate_index: int
    """The candidate's number in the run (``#3``)."""
    candidate_id: int
    folder: str
    """The agent folder written to (absolute)."""
    files: list[str] = Field(default_factory=list)
    """The source files rewritten, relative to the folder."""
    text_files: list[str] = Field(default_factory=list)
    """``<agent>.<component>.txt`` files written instead, where a text is computed at run time
    or its file changed since the run started."""
    components: list[str] = Field(default_factory=list)
    """The component keys written into the source."""
    author: str
    at: datetime = Field(default_factory=utcnow)

    @classmethod
    def from_event(cls, event: RunEvent) -> Applied:
        return cls.model_validate(event.payload | {"at": event.created_at})

    @property
    def folder_name(self) -> str:
        return PurePath(self.folder).name

    def summary(self) -> str:
        """``#3 applied to my_agent (prompt.py) by ana at 2026-11-29 10:02 UTC``."""
        written = ", ".join(self.files + self.text_files) or "nothing"
        return (f"#{self.candidate_index} applied to {self.folder_name} ({written}) by "
                f"{self.author} at {self.at:%Y-%m-%d %H:%M} UTC")

    def short(self) -> str:
        """``applied #3 to my_agent by ana``: a note beside a run in a list."""
        return f"applied #{self.candidate_index} to {self.folder_name} by {self.author}"
