"""Why a text already tried is not wanted again, as a typed value with its words.

The reflection reads it (the ``refusal`` of an ``already_tried`` record), the demo model honours
a reviewer's reason by it, and a skipped iteration says whether it repeated a rejected text by
it: none of them parses the sentence back. It is derived from stored columns (a proposal's
status, its last decision), so nothing new is stored and older runs read the same.
"""

from __future__ import annotations

from enum import StrEnum


class Refusal(StrEnum):
    """How a tried text was refused; its :attr:`words` lead the sentence a person reads."""

    REVIEWER = "reviewer rejected"
    RULE = "rule rejected"
    NOT_ACCEPTED = "not accepted"
    """Settled rejected without a rejecting decision (the run ended it, say)."""
    EDITED_AWAY = "edited away"
    INVALID = "invalid"

    @property
    def words(self) -> str:
        return _WORDS[self]

    @property
    def outcome(self) -> str:
        """``rejected``, ``edited away`` or ``invalid``: what the reflection is told happened."""
        return "rejected" if self in REJECTIONS else self.value

    def why(self, reason: str | None) -> str:
        """The sentence: its words, then the reason when there is one ("A reviewer rejected the
        proposed text: too long")."""
        reason = reason or _NO_REASON.get(self)
        return f"{self.words}: {reason}" if reason else self.words

    def reason(self, reason: str | None) -> str:
        """The reason alone, as a candidate's history names it ("too long"): its words when
        none was kept and none is said by default."""
        return reason or _NO_REASON.get(self) or self.words


REJECTIONS = frozenset({Refusal.REVIEWER, Refusal.RULE, Refusal.NOT_ACCEPTED})
_WORDS = {
    Refusal.REVIEWER: "A reviewer rejected the proposed text",
    Refusal.RULE: "The acceptance rule rejected it",
    Refusal.NOT_ACCEPTED: "It was not accepted",
    Refusal.EDITED_AWAY: "A reviewer replaced this text with an edit of their own",
    Refusal.INVALID: "It was found invalid",
}
_NO_REASON = {Refusal.REVIEWER: "no reason given", Refusal.NOT_ACCEPTED: "it was not accepted",
              Refusal.INVALID: "no reason kept"}
"""What the sentence says when no reason was kept (an edit needs none)."""
