"""Choosing instruction versions to compare, their diffs, and per-example scores."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import diff_view, loaders, output_matrix, plots, session
from components.trial_detail import show_trial, text_block
from studio.model.costs import format_cost
from studio.views.charts import (
    example_comparison,
    example_results,
    front_frame,
    lineage_layout,
    score_grid,
)
from studio.views.diffing import changes_by_agent
from studio.views.lineage import NodeStory, node_story
from studio.views.markdown import escape_markdown
from studio.views.matrix import DEFAULT_PASS_AT
from studio.views.tables import candidate_label, evidence_frame


def pick(analysis: Any) -> list[int]:
    """Two or more candidates (default: the seed and the best)."""
    view = analysis.view
    candidates = view.candidates
    if not candidates:
        return []
    labels = {c.id: candidate_label(c.index, view.means.get(c.id), best=c.id == view.best_id,
                                    front=c.id in view.front)
              + ("" if c.pooled else " (not pooled)") for c in candidates}
    key = f"{session.COMPARE_SELECTED}.{view.run.id}"
    seed = candidates[0].id
    default = [seed] + ([view.best_id] if view.best_id not in (None, seed) else
                        [candidates[-1].id] if len(candidates) > 1 else [])
    session.init(key, default)
    st.session_state[key] = [c for c in st.session_state[key] if c in labels]
    return st.multiselect("Versions to compare (the first is the baseline)", list(labels),
                          key=key, format_func=labels.__getitem__)


def diffs(analysis: Any, selected: list[int]) -> None:
    by_id = {c.id: c for c in analysis.view.candidates}
    chosen = [by_id[c] for c in selected if c in by_id]
    if len(chosen) < 2:
        st.info("Pick at least two versions to see what changed between them.")
        return
    base = chosen[0]
    show = _by_agent if any("." in key for key in base.components) else _by_component
    if len(chosen) == 2:
        show(base, chosen[1])
        return
    tabs = st.tabs([f"#{base.index} → #{c.index}" for c in chosen[1:]])
    for tab, other in zip(tabs, chosen[1:], strict=True):
        with tab:
            show(base, other)


def _by_component(base: Any, other: Any, key: str = session.COMPARE_COMPONENT) -> None:
    """A single agent's components: one at a time, chosen above the diff."""
    components = list(base.components)
    component = components[0]
    if len(components) > 1:
        component = st.segmented_control("Component", components, key=key,
                                         default=components[0]) or components[0]
    diff_view.side_by_side(base.components.get(component, ""),
                           other.components.get(component, ""),
                           left=f"#{base.index}", right=f"#{other.index}")


def _by_agent(base: Any, other: Any) -> None:
    """A workflow's components grouped by agent: each changed one as a diff, the unchanged
    ones named."""
    for group in changes_by_agent(base.components, other.components):
        st.markdown(f"**Agent {escape_markdown(group.agent)}** · {group.changed} of "
                    f"{len(group.changes)} component(s) changed")
        for change in group.changes:
            if change.unchanged:
                st.caption(f"{escape_markdown(change.component)}: unchanged")
                continue
            diff_view.side_by_side(
                change.old, change.new,
                left=f"#{base.index} · {group.agent} · {change.component}",
                right=f"#{other.index} · {group.agent} · {change.component}")


def per_example(analysis: Any, selected: list[int]) -> None:
    view = analysis.view
    val = [e for e in analysis.examples if e.id in set(view.val_ids)]
    pooled = [c for c in selected if c in view.matrix]
    if not pooled:
        st.caption("None of the chosen versions has been scored on the validation set.")
        return
    table = example_comparison(view.matrix, pooled, view.candidates, val)
    config = {c: st.column_config.NumberColumn(c, format="%+.3f" if c.startswith("Δ")
                                               else "%.3f")
              for c in table.columns if c != "example"}
    st.dataframe(table, hide_index=True, width="stretch", placeholder="could not evaluate",
                 column_config=config)
    missing = len(selected) - len(pooled)
    if missing:
        st.caption(f"{missing} chosen version(s) were never scored on the validation set "
                   "(rejected proposals are scored on their minibatch only).")


def front(analysis: Any) -> None:
    view = analysis.view
    costs = loaders.candidate_costs(view.run.id)
    table = front_frame(view.candidates, view.means, view.front, view.best_id, costs)
    st.caption("Cost of the run so far: "
               f"{escape_markdown(format_cost(loaders.run_cost(view.run.id)))}, of which its "
               f"trials {escape_markdown(format_cost(sum(costs.values())))} and the rest the "
               "reflection (LiteLLM's prices; the embedded and scripted models cost nothing)")
    st.dataframe(table, hide_index=True, width="stretch", placeholder="could not evaluate",
                 column_config={"mean": st.column_config.NumberColumn(format="%.3f"),
                                "cost_usd": st.column_config.NumberColumn(
                                    "cost ($)", format="%.6f",
                                    help="What its trials' model calls cost (agent and critic)"),
                                "on_front": st.column_config.CheckboxColumn("on front"),
                                "wins": st.column_config.NumberColumn(
                                    help="Validation examples where it has the top score"),
                                "best": st.column_config.CheckboxColumn()})


# --------------------------------------------------------------------------- clickable charts


def lineage(run_id: str, analysis: Any, selected: list[int]) -> None:
    """The lineage tree with each node's per-example results; a clicked node opens below."""
    view = analysis.view
    rows = loaders.proposal_history(run_id)
    statuses = {r.child_id: r.status.value for r in rows if r.child_id is not None}
    tree = lineage_layout(view.candidates, view.means, view.front, view.best_id, statuses,
                          shown=selected)
    val_ids = [e.id for e in analysis.examples if e.id in set(view.val_ids)]
    results = example_results(view.matrix, [int(i) for i in tree.nodes["id"]], val_ids,
                              pass_at(run_id))
    picked = plots.lineage(tree, results, key=f"{session.COMPARE_LINEAGE}.{run_id}")
    if picked is None:
        return
    story = node_story(picked, view.candidates, rows, view.means)
    if story is None:
        st.caption("That node is no longer in this run's tree.")
        return
    node_panel(run_id, story, analysis)


def pass_at(run_id: str) -> float:
    """The output matrix's pass mark for this run, so the lineage's dots agree with it."""
    value = st.session_state.get(f"{output_matrix.KEY}.pass_at.{run_id}")
    return float(value) if isinstance(value, int | float) else DEFAULT_PASS_AT


def node_panel(run_id: str, story: NodeStory, analysis: Any) -> None:
    """A node opened: why it was kept or not (the rule's verdict on its minibatch evidence, the
    decision and its reason), its diff against its parent, and its full text."""
    candidate = story.candidate
    with st.container(border=True, key="compare-lineage-node"):
        head, action = st.columns([4, 1], vertical_alignment="center")
        head.markdown(f"**{escape_markdown(story.headline)}**")
        action.button("Compare it above", icon=":material/add:", key=f"compare.add.{run_id}",
                      on_click=add_version, args=(run_id, candidate.id), width="stretch",
                      disabled=candidate.id in st.session_state.get(
                          f"{session.COMPARE_SELECTED}.{run_id}", []))
        st.markdown("**Decision** · " + escape_markdown(story.decision))
        st.markdown("**The rule** · " + escape_markdown(story.verdict))
        evidence_metrics(story)
        by_example(story, analysis)
        if story.parent is not None:
            st.caption(f"What changed from its parent #{story.parent.index} (word diff)")
            if any("." in key for key in story.parent.components):
                _by_agent(story.parent, candidate)
            else:
                _by_component(story.parent, candidate, key=f"{session.COMPARE_LINEAGE}.component")
        with st.expander(f"The full text of #{candidate.index}", expanded=story.parent is None):
            for component, text in candidate.components.items():
                text_block(component, text)


def evidence_metrics(story: NodeStory) -> None:
    """The proposal's minibatch evidence: the ONE evidence the rule and the gate read."""
    evidence = story.evidence
    if evidence is None or evidence.compared == 0:
        return
    cols = st.columns(4)
    cols[0].metric("Better parent's minibatch sum" if evidence.merge else
                   "Parent minibatch sum", f"{evidence.parent_sum:.3f}")
    cols[1].metric("Child minibatch sum", f"{evidence.child_sum:.3f}",
                   delta=round(evidence.child_sum - evidence.parent_sum, 3))
    cols[2].metric("Examples compared", evidence.compared)
    cols[3].metric("GEPA's rule would", "accept" if evidence.rule_accepts else "reject")


def by_example(story: NodeStory, analysis: Any) -> None:
    """The same evidence example by example: parent and child scores and feedback."""
    if story.row is None or story.evidence is None or story.evidence.compared == 0:
        return
    proposal = next((p for p in analysis.proposals if p.id == story.row.id), None)
    if proposal is None:
        return
    with st.expander(f"The minibatch example by example ({len(proposal.minibatch)})"):
        trials = loaders.proposal_evidence(proposal)
        st.dataframe(evidence_frame(trials.parent, trials.child), hide_index=True,
                     width="stretch", placeholder="could not evaluate", column_config={
                         "parent_score": st.column_config.NumberColumn("parent", format="%.3f"),
                         "child_score": st.column_config.NumberColumn("child", format="%.3f"),
                         "delta": st.column_config.NumberColumn("Δ", format="%+.3f")})


def add_version(run_id: str, candidate_id: int) -> None:
    """The button's callback (before the picker is drawn again): the node joins the versions
    compared at the top of the page."""
    key = f"{session.COMPARE_SELECTED}.{run_id}"
    chosen = list(st.session_state.get(key, []))
    if candidate_id not in chosen:
        st.session_state[key] = chosen + [candidate_id]


def heatmap(run_id: str, analysis: Any) -> None:
    """Candidates x validation examples; a clicked cell opens its trial with the correction
    form."""
    view = analysis.view
    val = [e for e in analysis.examples if e.id in set(view.val_ids)]
    grid = score_grid(view.matrix, view.candidates, val)
    cell = plots.heatmap(grid, key=f"{session.COMPARE_HEATMAP}.{run_id}")
    if cell is not None:
        trial_panel(run_id, analysis, *cell)


def trial_panel(run_id: str, analysis: Any, candidate_id: int, example_id: int) -> None:
    """The first validation trial of the clicked cell (the one the pool scores), in full."""
    trials = loaders.validation_trials(run_id, (candidate_id,)).get(candidate_id, [])
    first = min((t for t in trials if t.example_id == example_id), key=lambda t: t.id or 0,
                default=None)
    full = loaders.trial(run_id, first.id) if first is not None and first.id else None
    if full is None:
        st.caption("This candidate has no stored trial on that example.")
        return
    index = {c.id: c.index for c in analysis.view.candidates}.get(candidate_id)
    with st.container(border=True, key="compare-heatmap-trial"):
        show_trial(full, candidate=index)
        output_matrix.correction(run_id, full, where=session.COMPARE_HEATMAP)
