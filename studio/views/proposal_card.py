"""A proposal waiting at the gate, as a terminal shows it: what it changes, its minibatch
evidence and its word diff against the parent (``studio run --review review``, ``studio
proposals RUN --pending``). The diff is :mod:`studio.views.diffing`'s and the evidence the
row's own record (:class:`studio.engine.people.history.ProposalRow`): nothing is computed twice."""

from __future__ import annotations

from typing import Any

from studio.engine.people.history import ProposalRow
from studio.views.diffing import diff_stats, segments_json, terminal_diff

INDENT = "    "


def card_lines(row: ProposalRow) -> list[str]:
    """The card of one proposal built ``with_text``: a title line, then
    :func:`card_body`."""
    return [f"{row.title}: iteration {row.iteration}, {_what(row)}"
            + (" — waits for your decision" if row.waiting_for_you else ""), *card_body(row)]


def card_body(row: ProposalRow) -> list[str]:
    """Who edited it (for a person's edit), the evidence, then the diff (a merge: which
    parent each component is taken from), each line indented."""
    lines = []
    if row.edited_from is not None:
        lines.append(f"  the person's edit of proposal {row.edited_from_number or '?'} "
                     f"(id {row.edited_from})" + (f", by {row.edited_by}" if row.edited_by
                                                  else ""))
    lines.append(f"  evidence: {evidence_text(row)}")
    if row.merge is not None:
        lines.append("  " + ", ".join(f"{key} from #{source}"
                                      for key, source in row.merge.sources.items()))
        return lines
    lines.extend(diff_lines(row))
    return lines


def _what(row: ProposalRow) -> str:
    if row.merge is not None:
        return row.label
    parent = f"#{row.parent_index}" if row.parent_index is not None else "its parent"
    return f"changes {row.component} of {parent}"


def evidence_text(row: ProposalRow) -> str:
    """The minibatch evidence in one line, with the acceptance rule's verdict."""
    if row.now is None:
        return "not scored yet"
    sums = row.sums_text()
    if row.now.compared == 0:
        return sums
    verdict = "would accept" if row.now.rule_accepts else "would reject"
    bar = "the better parent" if row.now.merge else "the parent"
    return (f"{sums} on {row.now.compared} example{'s' if row.now.compared != 1 else ''} "
            f"({bar}'s sum → the child's); GEPA's rule {verdict}")


def diff_lines(row: ProposalRow) -> list[str]:
    """The word diff against the parent, indented, with its counts."""
    old, new = row.parent_text or "", row.text or ""
    stats = diff_stats(old, new)
    if stats.unchanged:
        return ["  no change against the parent"]
    head = (f"  diff against #{row.parent_index} ({stats.words_added} word(s) added, "
            f"{stats.words_removed} removed; [-removed-] {{+added+}}):")
    return [head, *(INDENT + line for line in terminal_diff(old, new).split("\n"))]


def card_json(row: ProposalRow) -> dict[str, Any]:
    """The row as ``studio proposals --json`` gives it, with the word diff as segments
    (``diff``: None for a merge or a row built without texts)."""
    diff = None
    if row.text is not None and row.parent_text is not None:
        diff = segments_json(row.parent_text, row.text)
    return row.as_dict() | {"diff": diff}
