"""Choosing instruction versions to compare, their diffs, and per-example scores."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import diff_view, loaders, session
from studio.model.costs import format_cost
from studio.views.charts import example_comparison, front_frame
from studio.views.diffing import changes_by_agent
from studio.views.markdown import escape_markdown
from studio.views.tables import candidate_label


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
                          key=key, format_func=labels.get)


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


def _by_component(base: Any, other: Any) -> None:
    """A single agent's components: one at a time, chosen above the diff."""
    components = list(base.components)
    component = components[0]
    if len(components) > 1:
        component = st.segmented_control("Component", components, key=session.COMPARE_COMPONENT,
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
    st.caption("Cost of the run's trials so far: "
               f"{escape_markdown(format_cost(sum(costs.values())))} "
               "(LiteLLM's prices; the embedded and scripted models cost nothing)")
    st.dataframe(table, hide_index=True, width="stretch", placeholder="could not evaluate",
                 column_config={"mean": st.column_config.NumberColumn(format="%.3f"),
                                "cost_usd": st.column_config.NumberColumn(
                                    "cost ($)", format="%.6f",
                                    help="What its trials' model calls cost (agent and critic)"),
                                "on_front": st.column_config.CheckboxColumn("on front"),
                                "wins": st.column_config.NumberColumn(
                                    help="Validation examples where it has the top score"),
                                "best": st.column_config.CheckboxColumn()})
