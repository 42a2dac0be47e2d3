"""A proposal and its evidence: the diff against the parent, the reflection's reasoning, parent
and child on each minibatch example; the decision form; the history of decisions."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import diff_view, frame, loaders, session
from components.trial_detail import text_block
from studio.engine.people.gates import decide, pending_in_order, when_applied
from studio.engine.people.history import proposal_numbers
from studio.model.config import ReviewMode
from studio.model.errors import PageChangedError, StudioError
from studio.model.limits import MAX_COMPONENT_CHARS
from studio.model.records import ProposalStatus, stored_id
from studio.model.team import Permission
from studio.model.workflow import split_component
from studio.projects.workspace import require_reason
from studio.views.markdown import escape_markdown
from studio.views.skips import skipped_note
from studio.views.tables import evidence_frame, format_score, merge_source_frame, proposal_history
from studio.views.waiting import waiting_note
from studio.views.workflows import describe_component


def watch(run_id: str) -> None:
    """Re-draw the page when a proposal arrives or is decided (checked every second).

    The page being drawn now shows the proposals as they are, so its own run records them
    first: only a change seen on a later tick of the fragment redraws it. (Recorded by the
    fragment alone, a decision made here was "new" to the fragment's run inside the page's
    run, which then restarted the page right after its title; Streamlit's browser side could
    lose the heading that came next, as a CI run of the five-tab race showed.)"""
    key = f"{session.PROPOSALS_WATCH}.{run_id}"
    st.session_state[key] = _signature(run_id)
    inline = [True]  # the fragment's first run is inside this page's: nothing to read again

    @st.fragment(run_every=1)
    def watcher() -> None:
        if inline:
            inline.clear()
            return
        signature = _signature(run_id)
        previous = st.session_state.get(key)
        st.session_state[key] = signature
        if previous is not None and previous != signature:
            pending = pending_in_order(loaders.proposals(run_id))
            if pending:  # before the rerun, so a message about the last is gone
                session.retire_flash_unless_about(stored_id(pending[0]))
            st.rerun(scope="app")

    watcher()


def _signature(run_id: str) -> tuple:
    """What the watcher compares: the run's status and its latest proposals' states."""
    run = loaders.run(run_id)
    proposals = loaders.proposals(run_id)
    return (run.status.value if run else None,
            tuple((p.id, p.status.value) for p in proposals[-5:]), len(proposals))


def current(run: Any) -> Any | None:
    """The proposal to show now: the first pending one in the order to decide them (naming
    the others), else one being scored (with a note)."""
    proposals = loaders.proposals(run.id)
    waiting = pending_in_order(proposals)
    _note_shown(run.id, waiting[0] if waiting else None, proposals)
    if waiting:
        session.retire_flash_unless_about(stored_id(waiting[0]))
        note = waiting_note(waiting, proposal_numbers(proposals))
        if note:
            st.info(note, icon=":material/low_priority:")
        return waiting[0]
    evaluating = [p for p in proposals if p.status is ProposalStatus.EVALUATING]
    if evaluating and run.status.is_active:
        st.info(f"{loaders.proposal_title(evaluating[-1])} (iteration "
                f"{evaluating[-1].iteration}) is being "
                "scored on its minibatch; it comes here when it is ready.",
                icon=":material/hourglass_top:")
    elif run.config.review is not ReviewMode.REVIEW:
        st.info("This run decides automatically (review policy: auto). Start a run with the "
                "review policy *review* to decide on each proposal yourself. The history of "
                "decisions is below.")
    elif run.status.is_active:
        st.info("No proposal is waiting. The run is scoring its parent and reflecting; the next "
                "proposal appears here by itself.", icon=":material/hourglass_top:")
    else:
        st.info(f"The run is {run.status.value}: no proposal is waiting.")
    return None


def _shown_key(run_id: str) -> str:
    return f"{session.PROPOSALS_SHOWN}.{run_id}"


def _note_shown(run_id: str, proposal: Any | None, proposals: list[Any]) -> None:
    """Record the proposal this page shows the person to decide. When the page swapped it on
    its own (another tab or the CLI decided the one they saw), keep the one they saw, so that
    their next click is refused rather than landing on a proposal they did not choose, and say
    who decided it and when: a tab that lost the race says so even if its click never
    arrived (Streamlit drops a click on a button the page no longer draws)."""
    key = _shown_key(run_id)
    seen = st.session_state.get(key)
    if proposal is not None and seen in (None, proposal.id):
        st.session_state[key] = proposal.id
        return
    before = next((p for p in proposals if p.id == seen), None)
    if before is None:  # nothing was shown, or a proposal no longer stored
        st.session_state.pop(key, None)
        return
    was = (f"{loaders.proposal_title(before)}, which this page showed you, "
           f"{loaders.what_became_of(before.id)}.")
    if proposal is None:
        st.warning(was, icon=":material/how_to_vote:")
        return
    now = loaders.proposal_title(proposal)
    st.warning(f"The page changed: {now} is now shown. {was} Read {now} before you decide: "
               "your first decision click on it is refused, so that a click meant for the "
               "proposal you saw never lands on this one.", icon=":material/swap_horiz:")


def evidence(proposal: Any) -> None:
    """Diff (or a merge's sources), reasoning and per-example evidence of one proposal."""
    ev = _merge_header(proposal) if proposal.is_merge else _reflection_header(proposal)
    if ev.evidence.corrected:
        judged = ev.evidence.judged
        st.caption(f"These sums count people's corrections; the judge's scores alone give "
                   f"{judged.arrow()} ({judged.compared} examples compared).")
    _per_example(ev)


def _merge_header(proposal: Any) -> Any:
    """Which component comes from which parent, and the rule: the merged child's sum on the
    subsample against the better parent's (at least as high accepts, as in GEPA)."""
    candidates = {stored_id(c): c for c in loaders.candidates(proposal.run_id)}
    st.caption(escape_markdown(proposal.reasoning))
    st.dataframe(merge_source_frame(proposal, candidates), hide_index=True, width="stretch",
                 placeholder="?", column_config={
                     "from": st.column_config.NumberColumn("taken from", format="#%d"),
                     "why": st.column_config.TextColumn(width="large")})
    ev = loaders.proposal_evidence(proposal)
    cols = st.columns(4)
    for col, parent in zip(cols, proposal.merge.parents, strict=False):
        index = candidates[parent].index if parent in candidates else "?"
        col.metric(f"Parent #{index} sum", f"{ev.parent_sums.get(parent, 0.0):.3f}")
    cols[2].metric("Merged child sum", f"{ev.child_sum:.3f}",
                   delta=round(ev.child_sum - ev.parent_sum, 3) if ev.compared else None)
    cols[3].metric("GEPA's rule would", "accept" if ev.rule_accepts else "reject")
    st.caption(f"{ev.compared} validation examples compared; below, the better parent against "
               "the merged child.")
    return ev


def _reflection_header(proposal: Any) -> Any:
    parent = loaders.candidate(proposal.parent_id)
    index_of = {c.id: c.index for c in loaders.candidates(proposal.run_id)}
    parent_text = parent.components.get(proposal.component, "")
    run = loaders.run(proposal.run_id)
    agent, component = split_component(proposal.component)
    st.markdown("Changes " + escape_markdown(describe_component(
        proposal.component, run.spec if run else None)))
    diff_view.side_by_side(
        parent_text, proposal.text,
        left=f"Parent #{index_of.get(parent.id, '?')}: {agent + ' · ' if agent else ''}"
             f"{component}",
        right=loaders.proposal_title(proposal) + (f" (an edit of id {proposal.edited_from})"
                                                  if proposal.edited_from else ""))
    if proposal.reasoning:
        with st.expander("The reflection's reasoning"):
            text_block("Reasoning", proposal.reasoning)
    ev = loaders.proposal_evidence(proposal)
    verdict = "accept" if ev.rule_accepts else "reject"
    cols = st.columns(4)
    cols[0].metric("Parent minibatch sum", f"{ev.parent_sum:.3f}")
    cols[1].metric("Child minibatch sum", f"{ev.child_sum:.3f}",
                   delta=round(ev.child_sum - ev.parent_sum, 3) if ev.compared else None)
    cols[2].metric("Examples compared", ev.compared)
    cols[3].metric("GEPA's rule would", verdict)
    return ev


def _per_example(ev: Any) -> None:
    st.dataframe(evidence_frame(ev.parent, ev.child), hide_index=True, width="stretch",
                 placeholder="could not evaluate", column_config={
                     "parent_score": st.column_config.NumberColumn("parent", format="%.3f"),
                     "child_score": st.column_config.NumberColumn("child", format="%.3f"),
                     "delta": st.column_config.NumberColumn("Δ", format="%+.3f")})
    child_by_example = {t.example_id: t for t in ev.child}
    for trial in ev.parent:
        child = child_by_example.get(trial.example_id)
        title = (f"{trial.split.value} example {trial.example_index}: parent "
                 f"{format_score(trial.effective_score)} → child "
                 f"{format_score(child.effective_score) if child else 'not scored yet'}")
        with st.expander(title):
            left, right = st.columns(2)
            with left:
                text_block("Parent output", trial.output)
                text_block("Feedback", trial.effective_feedback)
            with right:
                text_block("Child output", child.output if child else "")
                text_block("Feedback", child.effective_feedback if child else "")


def decision_form(proposal: Any) -> None:
    """Accept, reject with a reason, stop, or edit; every button carries the proposal the page
    showed the person (:func:`_note_shown`), which :func:`decide` checks."""
    recorded = loaders.proposal_decisions(proposal.id)
    if recorded:
        d = recorded[-1]
        st.success(f"Decision recorded: {d.action.value} by {escape_markdown(d.author)}. The run "
                   "applies it within a moment.", icon=":material/check:")
        return
    if not frame.allowed(Permission.GATE):
        return
    shown = {"shown_id": st.session_state.get(_shown_key(proposal.run_id))}
    st.markdown("**Your decision**")
    accept, reject, stop = st.columns([1, 3, 1], vertical_alignment="bottom")
    accept.button("Accept", type="primary", icon=":material/check:", width="stretch",
                  key=f"proposals.accept.{proposal.id}", on_click=_decide,
                  args=(proposal, "accept"), kwargs=shown)
    reason_key = f"{session.PROPOSALS_REASON}.{proposal.id}"
    with reject:
        cols = st.columns([3, 1], vertical_alignment="bottom")
        cols[0].text_input("Reason for rejecting (the next reflection reads it)", key=reason_key,
                           placeholder="e.g. too long; do not mention the season")
        cols[1].button("Reject", icon=":material/close:", width="stretch",
                       key=f"proposals.reject.{proposal.id}", on_click=_decide,
                       args=(proposal, "reject"), kwargs={"reason_key": reason_key, **shown})
    stop.button("Stop the run", icon=":material/stop:", width="stretch",
                key=f"proposals.stop.{proposal.id}", on_click=_decide, args=(proposal, "stop"),
                kwargs={"reason": "stopped from the Proposals page", **shown})
    if proposal.is_merge:
        st.caption("A merge takes whole components from its parents: accept or reject it "
                   "(there is no text to edit).")
        return
    edit_key = f"{session.PROPOSALS_EDIT}.{proposal.id}"
    session.init(edit_key, proposal.text)
    with st.expander("Edit the text, then re-score it on the same minibatch"):
        st.text_area("Edited text", key=edit_key, height=200, label_visibility="collapsed",
                     max_chars=MAX_COMPONENT_CHARS)
        st.button("Save the edit and re-score", icon=":material/edit:",
                  key=f"proposals.edit_go.{proposal.id}", on_click=_decide,
                  args=(proposal, "edit"), kwargs={"edit_key": edit_key, **shown})


def _decide(proposal: Any, action: str, *, reason: str = "", reason_key: str = "",
            edit_key: str = "", shown_id: int | None = None) -> None:
    """A decision button's callback: it runs before the page is drawn again, so a click in a
    tab whose proposal another tab decided meanwhile is answered ("already decided by ...")
    instead of vanishing with the form, and a click on a proposal the page swapped in under
    the person is refused ("the page changed"): that refusal is their acknowledgement of the
    new proposal. The outcome is said by the flash at the page's top."""
    reason = st.session_state.get(reason_key, "") if reason_key else reason
    edited_text = st.session_state.get(edit_key, "") if edit_key else None
    try:
        require_reason(action, reason)
        decide(proposal.id, action, reason=reason, edited_text=edited_text,
               author=session.author(), store=loaders.store(), shown_id=shown_id)
    except StudioError as exc:
        if isinstance(exc, PageChangedError):
            st.session_state[_shown_key(proposal.run_id)] = proposal.id
        session.flash(f"{loaders.proposal_title(proposal)}: {escape_markdown(str(exc))}",
                      kind="error")
        return
    if action != "stop":  # decided here: the next proposal to come is the one expected
        st.session_state[_shown_key(proposal.run_id)] = None
    loaders.decided()
    words = {"accept": "Accepted; the child is now scored on the validation set.",
             "reject": "Rejected; the next reflections of this component read the text and "
                       "your reason, and are asked again should they repeat it.",
             "edit": "Your edit is being scored on the same minibatch; it comes back here.",
             "stop": "The run stops; this proposal waits here again when it resumes."}
    later = when_applied(loaders.store(), proposal.run_id) if action != "stop" else None
    session.flash(f"{loaders.proposal_title(proposal)}: {words[action]}"
                  + (f" ({later})" if later else ""), about=proposal.id)


def history(run_id: str) -> None:
    rows = loaders.proposal_rows(run_id)
    if not rows:
        st.caption("No proposals yet.")
        return
    skipped = skipped_note(loaders.skipped_iterations(run_id))
    if skipped:
        st.info(escape_markdown(skipped), icon=":material/skip_next:")
    table = proposal_history(rows)
    if not table["agent"].astype(bool).any():  # a single-agent run: no agent column
        table = table.drop(columns="agent")
    picked = st.dataframe(
        table, hide_index=True, width="stretch", key="proposals.history",
        on_select="rerun", selection_mode="single-row", placeholder="—",
        column_config={"proposal": st.column_config.NumberColumn(
                           help="its number in this run (id: the database's, for `studio "
                                "decide`)"),
                       "id": st.column_config.NumberColumn(format="%d"),
                       "parent": st.column_config.NumberColumn(format="#%d"),
                       "child": st.column_config.NumberColumn(format="#%d"),
                       "parent_sum": st.column_config.NumberColumn("parent sum now",
                                                                   format="%.3f"),
                       "child_sum": st.column_config.NumberColumn("child sum now",
                                                                  format="%.3f"),
                       "evidence": st.column_config.TextColumn(
                           "evidence (parent → child)", width="medium"),
                       "reason": st.column_config.TextColumn(width="large")})
    selected = picked.selection.rows if picked else []
    if selected:
        chosen = int(table.iloc[selected[0]]["id"])
        row = next(r for r in rows if r.id == chosen)
        with st.container(border=True):
            st.markdown(f"**{row.title}** · iteration {row.iteration} · "
                        f"{row.status.value}")
            if row.invalid_reason:
                st.warning(escape_markdown(row.invalid_reason))
            if row.changed_since_decision:
                st.info(escape_markdown(f"Decided on {row.sums_text()}: the sums below are "
                                        "the ones now."), icon=":material/history:")
            evidence(next(p for p in loaders.proposals(run_id) if p.id == chosen))
    else:
        st.caption("Select a proposal to see its diff and evidence.")
