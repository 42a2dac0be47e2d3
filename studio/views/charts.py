"""Data behind the Compare page's charts: score per iteration, candidates x examples, lineage.

Pure functions over a :class:`studio.engine.policies.pool.RunView` and store records; the plotly
figures
are drawn in ``components/charts.py``. Missing scores ("could not evaluate") are NaN, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from studio.engine.people.history import proposal_numbers
from studio.model.records import Candidate, Example, Proposal, stored_id
from studio.views.matrix import DEFAULT_PASS_AT, Verdict
from studio.views.tables import example_label, one_line

if TYPE_CHECKING:  # the rows are built by the engine's history; only read here
    from studio.engine.people.history import ProposalRow


def candidate_index(candidates: Sequence[Candidate]) -> dict[int, int]:
    return {stored_id(c): c.index for c in candidates}


def iteration_series(candidates: Sequence[Candidate], means: dict[int, float | None],
                     proposals: Sequence[Proposal], trials_means: dict[int, dict[str, float]],
                     last_iteration: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(best, markers)``.

    ``best``: per iteration, the best validation mean among candidates pooled by then (effective
    scores, so overrides show). ``markers``: one point per evaluated proposal at its child's
    minibatch mean, with its status (accepted, rejected, pending, edited).
    """
    born: dict[int, float] = {}  # iteration -> best mean of the candidates born in it
    for c in candidates:
        mean = means.get(stored_id(c))
        if mean is not None:
            born[c.iteration] = max(mean, born.get(c.iteration, mean))
    rows = []
    running = math.nan
    for iteration in range(0, max(last_iteration, 0) + 1):  # one pass: a running maximum
        if iteration in born:
            running = born[iteration] if math.isnan(running) else max(running, born[iteration])
        rows.append({"iteration": iteration, "best": running})
    best = pd.DataFrame(rows, columns=["iteration", "best"])
    marks = []
    numbers = proposal_numbers(proposals)  # the run's own count, as the Proposals page shows
    for p in proposals:
        mean = trials_means.get(stored_id(p), {}).get("child")
        if mean is None:
            continue
        marks.append({"iteration": p.iteration, "score": mean, "status": p.status.value,
                      "proposal": numbers[stored_id(p)]})
    markers = pd.DataFrame(marks, columns=["iteration", "score", "status", "proposal"])
    return best, markers


def minibatch_points(rows: Sequence[ProposalRow]) -> pd.DataFrame:
    """One row per proposal with a child compared on its minibatch: the parent's and the
    child's mean there (the sums over the examples compared, as the rule reads them), so a chart
    shows each proposal against its own parent and not against the validation line."""
    points = []
    for row in rows:
        now = row.now
        if now is None or now.compared == 0:
            continue
        points.append({"iteration": row.iteration, "proposal": row.number or row.id,
                       "status": row.status.value, "child": row.child_index,
                       "parent_mean": now.parent_sum / now.compared,
                       "child_mean": now.child_sum / now.compared,
                       "compared": now.compared})
    return pd.DataFrame(points, columns=["iteration", "proposal", "status", "child",
                                         "parent_mean", "child_mean", "compared"])


EXAMPLE_TEXT_CHARS = 18
"""Characters of an example's distinguishing text on a chart's axis (the full input hovers)."""
HOVER_CHARS = 300
"""Characters of an example's input in a chart's hover box."""


@dataclass(frozen=True)
class ExampleAxis:
    """How examples are named on a chart's axis: ``val 3 · France?`` (the per-run number and
    the text that tells it from its neighbours once their common opening is dropped), and the
    full input (bounded) for the hover box."""

    labels: list[str]
    hovers: list[str]


def example_axis(examples: Sequence[Example], chars: int = EXAMPLE_TEXT_CHARS) -> ExampleAxis:
    """Axis labels that differ where the examples differ: twenty questions that all begin "What
    is the capital of" are labelled by what follows it."""
    texts = [_example_text(e) for e in examples]
    start = _common_words(texts)
    labels = [f"{e.split.value} {e.index} · " + one_line(text[start:], chars)
              if text[start:] else f"{e.split.value} {e.index}"
              for e, text in zip(examples, texts, strict=True)]
    return ExampleAxis(labels, [one_line(text, HOVER_CHARS) for text in texts])


def _example_text(example: Example) -> str:
    """The example's input on one line (its other fields when it has no ``input``)."""
    return example_label(example, 10**6).split(": ", 1)[1]


def _common_words(texts: Sequence[str]) -> int:
    """Length of the whole words every text begins with (0 for fewer than two texts)."""
    if len(texts) < 2:
        return 0
    prefix = texts[0]
    for text in texts[1:]:
        while not text.startswith(prefix):
            prefix = prefix[:-1]
    return prefix.rfind(" ") + 1


@dataclass(frozen=True)
class ScoreGrid:
    """The candidates x examples heatmap with what a click needs: which candidate and which
    example each cell is."""

    scores: pd.DataFrame
    """Rows ``#index``, columns the example axis labels; NaN = could not evaluate."""
    candidate_ids: list[int]
    example_ids: list[int]
    hovers: list[str]
    """Each column's example input in full (bounded)."""

    def cell(self, row: int, column: int) -> tuple[int, int] | None:
        """``(candidate id, example id)`` of a cell, None outside the grid."""
        if 0 <= row < len(self.candidate_ids) and 0 <= column < len(self.example_ids):
            return self.candidate_ids[row], self.example_ids[column]
        return None


def score_grid(matrix: dict[int, dict[int, float | None]], candidates: Sequence[Candidate],
               examples: Sequence[Example]) -> ScoreGrid:
    """Candidates (rows, in index order) x the validation examples any was scored on."""
    index = candidate_index(candidates)
    shown = [e for e in examples if any(stored_id(e) in row for row in matrix.values())]
    axis = example_axis(shown)
    rows = sorted(matrix, key=lambda cid: index.get(cid, 0))
    data = {f"#{index.get(c, '?')}": [_nan(matrix[c].get(stored_id(e))) for e in shown]
            for c in rows}
    scores = pd.DataFrame(data, index=axis.labels).T
    return ScoreGrid(scores, rows, [stored_id(e) for e in shown], axis.hovers)


def score_matrix(matrix: dict[int, dict[int, float | None]], candidates: Sequence[Candidate],
                 examples: Sequence[Example]) -> pd.DataFrame:
    """Candidates (rows, ``#index``) x validation examples (columns), NaN = could not evaluate."""
    index = candidate_index(candidates)
    labels = {stored_id(e): example_label(e, 24) for e in examples}
    example_ids = [stored_id(e) for e in examples
                   if any(e.id in row for row in matrix.values())]
    data = {
        f"#{index[c]}": [_nan(matrix[c].get(e)) for e in example_ids]
        for c in sorted(matrix, key=lambda cid: index.get(cid, 0))
    }
    frame = pd.DataFrame(data, index=[labels[e] for e in example_ids]).T
    return frame


def example_comparison(matrix: dict[int, dict[int, float | None]], selected: Sequence[int],
                       candidates: Sequence[Candidate], examples: Sequence[Example]
                       ) -> pd.DataFrame:
    """Per validation example: each selected candidate's score, and its delta to the first."""
    index = candidate_index(candidates)
    selected = [c for c in selected if c in matrix]
    rows = []
    for e in examples:
        if not selected or e.id not in matrix[selected[0]]:
            continue
        row: dict[str, Any] = {"example": example_label(e, 60)}
        base = _nan(matrix[selected[0]].get(e.id))
        for i, cid in enumerate(selected):
            score = _nan(matrix[cid].get(e.id))
            row[f"#{index[cid]}"] = score
            if i:
                row[f"Δ #{index[cid]}"] = score - base
        rows.append(row)
    return pd.DataFrame(rows)


def front_frame(candidates: Sequence[Candidate], means: dict[int, float | None],
                front: dict[int, int], best_id: int | None,
                costs: dict[int, float] | None = None) -> pd.DataFrame:
    """Pooled candidates with their mean, Pareto-front membership and wins; with ``costs``
    (candidate id -> US dollars) also what its trials cost."""
    index = candidate_index(candidates)
    rows = [{"candidate": f"#{c.index}", "iteration": c.iteration,
             "parents": ", ".join(f"#{index[p]}" for p in c.parent_ids if p in index) or "-",
             "mean": _nan(means.get(stored_id(c))), "on_front": stored_id(c) in front,
             "wins": front.get(stored_id(c), 0), "best": stored_id(c) == best_id,
             "cost_usd": (costs or {}).get(stored_id(c), 0.0)}
            for c in candidates if c.pooled]
    columns = ["candidate", "iteration", "parents", "mean", "on_front", "wins", "best"]
    return pd.DataFrame(rows, columns=columns + (["cost_usd"] if costs is not None else []))


@dataclass
class Lineage:
    nodes: pd.DataFrame
    """id, index, x (iteration), y, mean, pooled, on_front, best, status, parents (indexes)."""
    edges: list[tuple[int, int]]
    """(parent id, child id), one per parent: a merge's child has two."""
    note: str | None = None
    """What was left out, when the tree shows only part of a large run."""

    @property
    def merge_edges(self) -> list[tuple[int, int]]:
        """The edges into children of more than one parent (GEPA merges)."""
        parents: dict[int, int] = {}
        for _, child in self.edges:
            parents[child] = parents.get(child, 0) + 1
        return [(p, c) for p, c in self.edges if parents[c] > 1]


LINEAGE_ALL_UP_TO = 400
"""Above this many candidates the tree shows the pool, the chosen versions and their ancestors:
thousands of rejected leaves make a chart nobody can read (and the browser slow to draw)."""


def lineage_layout(candidates: Sequence[Candidate], means: dict[int, float | None],
                   front: dict[int, int], best_id: int | None,
                   statuses: dict[int, str] | None = None, *, shown: Sequence[int] = (),
                   limit: int = LINEAGE_ALL_UP_TO) -> Lineage:
    """A tree layout: x is the iteration a candidate was born in; leaves take successive rows
    in depth-first order and a parent sits at the middle of its children. A run of more than
    ``limit`` candidates is narrowed by :func:`lineage_subset` (``shown``: the chosen ones)."""
    statuses = statuses or {}
    kept, note = lineage_subset(candidates, shown, limit)
    ordered = sorted(kept, key=lambda c: c.index)
    ids = {stored_id(c) for c in ordered}
    children: dict[int, list[int]] = {stored_id(c): [] for c in ordered}
    roots = []
    for c in ordered:
        parents = [p for p in c.parent_ids if p in ids]
        if parents:
            children[parents[0]].append(stored_id(c))
        else:
            roots.append(stored_id(c))
    y = _tree_rows(roots, children)
    by_index = {stored_id(c): c.index for c in ordered}
    rows = [{
        "id": cid, "index": c.index, "x": c.iteration, "y": -y.get(cid, 0.0),
        "mean": _nan(means.get(cid)), "pooled": c.pooled, "on_front": cid in front,
        "best": cid == best_id,
        "status": statuses.get(cid, "pooled" if c.pooled else "not pooled"),
        "parents": [by_index[p] for p in c.parent_ids if p in ids],
    } for c, cid in ((c, stored_id(c)) for c in ordered)]
    edges = [(p, stored_id(c)) for c in ordered for p in c.parent_ids if p in ids]
    return Lineage(pd.DataFrame(rows, columns=["id", "index", "x", "y", "mean", "pooled",
                                               "on_front", "best", "status", "parents"]),
                   edges, note)


def example_results(matrix: dict[int, dict[int, float | None]], candidate_ids: Sequence[int],
                    example_ids: Sequence[int], pass_at: float = DEFAULT_PASS_AT
                    ) -> dict[int, list[Verdict]]:
    """Per candidate scored on the validation set, its verdict on each example (in
    ``example_ids`` order): the lineage draws them as dots around the node, so which candidate
    wins where (the Pareto front) reads off the tree. Candidates never scored there (a rejected
    proposal's child) have none."""
    results: dict[int, list[Verdict]] = {}
    for cid in candidate_ids:
        row = matrix.get(cid)
        if row is None:
            continue
        results[cid] = [_verdict(row, e, pass_at) for e in example_ids]
    return results


def _verdict(row: dict[int, float | None], example_id: int, pass_at: float) -> Verdict:
    if example_id not in row:
        return Verdict.MISSING
    score = row[example_id]
    if score is None:
        return Verdict.UNSCORED
    return Verdict.PASS if score >= pass_at else Verdict.FAIL


def _tree_rows(roots: list[int], children: dict[int, list[int]]) -> dict[int, float]:
    """Row of each node: leaves in depth-first order, a parent at the mean of its children.
    Iterative (a run that always refines its best candidate is a chain thousands deep)."""
    y: dict[int, float] = {}
    next_row = 0.0
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            kids = children[node]
            if not kids:
                y[node] = next_row
                next_row += 1
            elif expanded:
                y[node] = sum(y[k] for k in kids) / len(kids)
            else:
                stack.append((node, True))
                stack.extend((k, False) for k in reversed(kids))
    return y


def lineage_subset(candidates: Sequence[Candidate], shown: Sequence[int] = (),
                   limit: int = LINEAGE_ALL_UP_TO) -> tuple[list[Candidate], str | None]:
    """Every candidate up to ``limit``; above it the pooled ones, those in ``shown`` and all
    their ancestors, with a note saying how many were left out."""
    if len(candidates) <= limit:
        return list(candidates), None
    by_id = {stored_id(c): c for c in candidates}
    keep: set[int] = set()
    todo = [stored_id(c) for c in candidates if c.pooled] + [c for c in shown if c in by_id]
    while todo:
        node = todo.pop()
        if node in keep:
            continue
        keep.add(node)
        todo.extend(p for p in by_id[node].parent_ids if p in by_id)
    kept = [c for c in candidates if stored_id(c) in keep]
    left_out = len(candidates) - len(kept)
    note = (f"Showing {len(kept)} of {len(candidates)} candidates: the pool, the versions "
            f"chosen above and their ancestors ({left_out} rejected or unscored proposals "
            "left out).") if left_out else None
    return kept, note


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)
