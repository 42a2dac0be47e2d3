"""A run's lineage across forks: the path in each ancestor run from its seed to the candidate
that was forked, then the run's own tree. Pure (pandas, no Streamlit); drawn by
``components/fork_panel.py``. Candidate ids are the store's, unique across runs, so they key the
nodes of every run at once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from studio.engine.people.history import ProposalRow
from studio.engine.policies.evidence import verdict_reason
from studio.model.evidence import Evidence
from studio.model.records import Candidate, DecisionAction, ProposalStatus, Run, stored_id
from studio.projects.forking import RunTree
from studio.views.charts import lineage_layout
from studio.views.tables import format_score

NODE_COLUMNS = ["id", "run_id", "run", "index", "label", "x", "y", "mean", "best", "here"]
PATH_COLUMNS = ["run", "candidate", "iteration", "validation mean", "step"]


@dataclass
class CrossLineage:
    nodes: pd.DataFrame
    """One row per candidate shown: id, run_id, run (label), index, label (``run #i``), x (steps
    since the first ancestor's seed), y, mean, best, here (in the run being viewed)."""
    edges: list[tuple[int, int]]
    """(parent id, child id); a fork is an edge from the forked candidate to the fork's #0."""
    path: pd.DataFrame
    """The ancestors' path as a table: run, candidate, iteration, validation mean, step."""

    @property
    def forked(self) -> bool:
        return not self.path.empty


def run_short_label(run: Run) -> str:
    return f"{run.id[:8]}" + (f" {run.name}" if run.name else "")


def ancestor_path(candidates: Sequence[Candidate], forked_id: int) -> list[Candidate]:
    """The forked candidate and its first-parent ancestors back to the seed, seed first."""
    by_id = {c.id: c for c in candidates}
    path: list[Candidate] = []
    current = by_id.get(forked_id)
    while current is not None and current not in path:
        path.append(current)
        current = by_id.get(current.parent_ids[0]) if current.parent_ids else None
    return path[::-1]


def cross_run_lineage(chain: Sequence[RunTree]) -> CrossLineage:
    """The lineage of ``chain[-1]`` (runs oldest first, each forked from the one before)."""
    if not chain:
        return CrossLineage(pd.DataFrame(columns=NODE_COLUMNS), [], pd.DataFrame(
            columns=PATH_COLUMNS))
    here = chain[-1]
    tree = lineage_layout(here.candidates, here.means, here.front, here.best_id)
    seed_y = float(tree.nodes["y"].iloc[0]) if not tree.nodes.empty else 0.0
    rows, path_rows = [], []
    edges: list[tuple[int, int]] = []
    offset, previous = 0.0, None
    for ancestor, child in zip(chain, chain[1:], strict=False):
        origin = child.run.spec.forked_from
        steps = ancestor_path(ancestor.candidates, origin.candidate_id if origin else -1)
        for candidate in steps:
            rows.append(_node(ancestor, candidate, offset + candidate.iteration, seed_y, False))
            path_rows.append({"run": run_short_label(ancestor.run),
                              "candidate": f"#{candidate.index}",
                              "iteration": candidate.iteration,
                              "validation mean": _nan(ancestor.means.get(stored_id(candidate))),
                              "step": "forked" if candidate is steps[-1] else ""})
            if previous is not None:
                edges.append((previous, stored_id(candidate)))
            previous = stored_id(candidate)
        offset += (steps[-1].iteration if steps else 0) + 1
    for node in tree.nodes.itertuples():
        candidate = next(c for c in here.candidates if c.id == node.id)
        rows.append(_node(here, candidate, offset + node.x, float(node.y), True))
    edges += list(tree.edges)
    if previous is not None and here.candidates:
        edges.append((previous, stored_id(here.candidates[0])))
    return CrossLineage(pd.DataFrame(rows, columns=NODE_COLUMNS), edges,
                        pd.DataFrame(path_rows, columns=PATH_COLUMNS))


def _node(tree: RunTree, candidate: Candidate, x: float, y: float, here: bool) -> dict:
    return {"id": candidate.id, "run_id": tree.run.id, "run": run_short_label(tree.run),
            "index": candidate.index, "label": f"{tree.run.id[:6]} #{candidate.index}",
            "x": x, "y": y, "mean": _nan(tree.means.get(stored_id(candidate))),
            "best": candidate.id == tree.best_id, "here": here}


def forks_frame(forks: Sequence[Run]) -> pd.DataFrame:
    """Runs forked from a run: which candidate each started from, and where it stands."""
    rows = [{"run": run_short_label(r), "id": r.id,
             "from candidate": f"#{r.spec.forked_from.candidate_index}",
             "status": r.status.value} for r in forks if r.spec.forked_from is not None]
    return pd.DataFrame(rows, columns=["run", "id", "from candidate", "status"])


def candidate_choices(candidates: Sequence[Candidate], means: dict[int, float | None],
                      best_id: int | None) -> dict[int, str]:
    """``index -> label`` for the fork form: every candidate, its mean, the best marked."""
    return {c.index: f"#{c.index} · " + format_score(means.get(stored_id(c)), missing="not pooled")
            + (" · best" if c.id == best_id else "") for c in candidates}


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


# --------------------------------------------------------------------------- a node opened


@dataclass(frozen=True)
class NodeStory:
    """What a person reads when they open a node of the lineage: the candidate, the parent it
    is diffed against, and the proposal that made it with its evidence, the rule's verdict and
    the decision (who, what, why)."""

    candidate: Candidate
    parent: Candidate | None
    """The first parent (a merge's: the first of its two); None for the seed."""
    row: ProposalRow | None
    """The proposal whose child this is; None for the seed."""
    headline: str
    evidence: Evidence | None
    """The minibatch evidence as it is now (corrections made since count)."""
    verdict: str
    """The acceptance rule's verdict in words."""
    decision: str
    """How the proposal ended: the rule's or a person's decision and reason, or why it is not
    decided."""


ACTION_WORDS = {DecisionAction.ACCEPT: "Accepted", DecisionAction.REJECT: "Rejected",
                DecisionAction.EDIT: "Edited", DecisionAction.STOP: "Stopped at"}


def node_story(candidate_id: object, candidates: Sequence[Candidate],
               rows: Sequence[ProposalRow], means: dict[int, float | None]) -> NodeStory | None:
    """The story of one node, or None when ``candidate_id`` (from a click in the browser:
    untrusted) is not a candidate of this run."""
    by_id = {stored_id(c): c for c in candidates}
    if not isinstance(candidate_id, int) or isinstance(candidate_id, bool) \
            or candidate_id not in by_id:
        return None
    candidate = by_id[candidate_id]
    parent = by_id.get(candidate.parent_ids[0]) if candidate.parent_ids else None
    row = next((r for r in rows if r.child_id == candidate_id), None)
    evidence = row.now if row is not None else None
    return NodeStory(candidate, parent, row, _headline(candidate, parent, row, means),
                     evidence, rule_verdict(row), decision_words(row, rows))


def _headline(candidate: Candidate, parent: Candidate | None, row: ProposalRow | None,
              means: dict[int, float | None]) -> str:
    mean = means.get(stored_id(candidate))
    scored = (f"validation mean {format_score(mean)}" if candidate.pooled
              else "not scored on the validation set")
    if row is None and parent is None:
        return f"#{candidate.index} · the seed · {scored}"
    origin = (f"as a {row.label}" if row is not None and row.merge is not None
              else f"from #{parent.index}" if parent is not None else "")
    status = row.status.value if row is not None else ("pooled" if candidate.pooled else "")
    proposal = f" · proposal #{row.id}" if row is not None else ""
    return (f"#{candidate.index} · born in iteration {candidate.iteration} {origin}"
            f"{proposal} · {status} · {scored}")


def rule_verdict(row: ProposalRow | None) -> str:
    """The rule's verdict on the evidence now, and on the evidence the decision was made on
    when corrections changed it since."""
    if row is None:
        return "The seed is not a proposal: nothing was decided about it."
    if row.now is None or row.now.compared == 0:
        return "No example could be compared yet: the rule has nothing to go on."
    words = ("The rule accepts: " if row.now.rule_accepts else "The rule rejects: ") + \
        verdict_reason(row.now) + "."
    if row.changed_since_decision and row.at_decision is not None:
        words += " At the decision: " + verdict_reason(row.at_decision) + \
            " (corrections made since changed the sums)."
    return words


def decision_words(row: ProposalRow | None, rows: Sequence[ProposalRow]) -> str:
    """Who decided what and why, or why nothing is decided."""
    if row is None:
        return "The run started from it."
    if row.decision is not None:
        who = "the acceptance rule" if row.automatic else f"{row.decided_by or 'a person'}"
        words = f"{ACTION_WORDS[row.decision]} by {who}"
        if row.reason and not row.automatic:
            words += f", who said: “{row.reason}”"
        if row.decision is DecisionAction.EDIT:
            edits = [r.id for r in rows if r.edited_from == row.id]
            words += f"; the edit is proposal #{edits[0]}" if edits else ""
        return words + "."
    return STATUS_WORDS.get(row.status, "Not decided.") + (
        f" {row.invalid_reason}" if row.invalid_reason else "")


STATUS_WORDS = {
    ProposalStatus.EVALUATING: "Being scored on its minibatch: no decision yet.",
    ProposalStatus.PENDING: "Waiting for a person's decision on the Proposals page.",
    ProposalStatus.INVALID: "Invalid: it was never compared.",
    ProposalStatus.ACCEPTED: "Accepted.",
    ProposalStatus.REJECTED: "Rejected.",
    ProposalStatus.EDITED: "Replaced by a person's edit.",
}
