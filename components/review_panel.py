"""Correcting a critic: edit the score and feedback of one trial or many, see the judge beside the
human with who and when, undo, and see at once what it changes in the run."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import loaders, review_queue, session
from components.trial_detail import show_thumbnails
from studio.engine.people.gates import merge_correction, override, undo_override
from studio.engine.people.history import numbered
from studio.model.errors import StudioError
from studio.model.limits import MAX_FEEDBACK_CHARS, MAX_OUTPUT_CHARS
from studio.model.records import stored_id
from studio.model.team import Permission
from studio.views.markdown import escape_markdown
from studio.views.tables import (
    format_score,
    override_changes,
    overrides_frame,
    review_frame,
    shown_columns,
)

SCOPES = ("Pending proposal", "Latest trials", "One iteration")
NONCE = "review.nonce"


def effect_panel(run_id: str) -> None:
    """The best candidate and the pending proposal's verdict, with the change since the last
    correction."""
    effect = loaders.effect(run_id)
    before = st.session_state.get(f"{session.REVIEW_EFFECT}.{run_id}")
    cols = st.columns(3)
    best = f"#{effect.best_index}" if effect.best_index is not None else "none yet"
    delta = None
    if before is not None and before.best_score is not None and effect.best_score is not None:
        delta = round(effect.best_score - before.best_score, 3) or None
    cols[0].metric("Best candidate", best,
                   delta=None if before is None or before.best_index == effect.best_index
                   else f"was #{before.best_index}", delta_color="off")
    cols[1].metric("Best validation mean", format_score(effect.best_score, missing="not scored"),
                   delta=delta)
    if effect.pending_id is None:
        cols[2].metric("Pending proposal", "none")
        return
    verdict = "accept" if effect.rule_accepts else "reject"
    was = None
    if before is not None and before.pending_id == effect.pending_id and \
            before.rule_accepts != effect.rule_accepts:
        was = f"was {'accept' if before.rule_accepts else 'reject'}"
    cols[2].metric(f"Proposal {effect.pending_number} (id {effect.pending_id}): the rule would",
                   verdict, delta=was,
                   delta_color="off")
    if effect.pending_is_merge:
        st.caption(f"A merge. Subsample sums (effective scores): merged child "
                   f"{effect.child_sum:.3f} vs the better parent {effect.parent_sum:.3f}. GEPA "
                   "accepts a merge when the child's is at least as high.")
        return
    st.caption(f"Minibatch sums (effective scores): child {effect.child_sum:.3f} vs parent "
               f"{effect.parent_sum:.3f}. GEPA accepts when the child's is strictly higher.")


def scope_trials(run_id: str) -> list[Any]:
    """The trials to review: the pending proposal's minibatch, the latest, or one iteration."""
    key = f"{session.REVIEW_FILTER}.{run_id}"
    session.init(f"{key}.scope", SCOPES[0])
    cols = st.columns([2, 1])
    scope = cols[0].segmented_control("Trials to review", SCOPES, key=f"{key}.scope") or SCOPES[1]
    if scope == SCOPES[0]:

        proposal = loaders.pending_proposal(run_id)
        if proposal is None:
            st.caption("No proposal is waiting: showing the latest trials.")
            return loaders.recent_trials(run_id, 100)
        evidence = loaders.proposal_evidence(proposal)
        st.caption(f"The parent's and the child's trials on "
                   f"{loaders.proposal_title(proposal).lower()}'s minibatch: "
                   "correcting them changes the verdict above.")
        return evidence.parent + evidence.child
    if scope == SCOPES[1]:
        session.init(f"{key}.limit", 100)
        limit = cols[1].number_input("How many", 10, 2000, step=50, key=f"{key}.limit")
        return loaders.recent_trials(run_id, int(limit))
    session.init(f"{key}.iteration", 0)
    iteration = cols[1].number_input("Iteration", 0, 100_000, key=f"{key}.iteration")
    return loaders.recent_trials(run_id, 5000, iteration=int(iteration))


MANY_COLUMN_ORDER = ("number", "output", "judge_score", "judge_verdict", "judge_feedback",
                     "human_score",
                     "human_feedback", "example", "input", "iteration", "phase", "candidate", "by",
                     "when", "id")
"""What a person reads to correct a trial first (its output, the judge's verdict, the columns
to edit) so they fit a laptop's width; the bookkeeping columns follow, past a scroll."""


def editor(run_id: str, trials: list[Any]) -> None:
    """Many trials at once: edit the human columns, then save."""
    if not trials:
        st.info("No trials to review yet. They appear as the run scores its examples.")
        return
    index_of = {stored_id(c): c.index for c in loaders.candidates(run_id)}
    frame = review_frame(trials, index_of, loaders.trial_numbers(run_id, [t.id for t in trials]))
    nonce = st.session_state.get(NONCE, 0)
    edited = st.data_editor(
        frame, key=f"{session.REVIEW_EDITOR}.{run_id}.{nonce}", hide_index=True, width="stretch",
        height=min(420, 38 + 35 * len(frame)), placeholder="—",
        column_order=shown_columns(MANY_COLUMN_ORDER, frame),
        disabled=[c for c in frame.columns if c not in ("human_score", "human_feedback")],
        column_config={
            "number": st.column_config.NumberColumn("trial", format="%d", width=50,
                                                    help="its number in this run"),
            "id": st.column_config.NumberColumn("id", format="%d"),
            "candidate": st.column_config.NumberColumn("cand.", format="#%d"),
            "judge_score": st.column_config.NumberColumn("judge score", format="%.3f"),
            "judge_verdict": st.column_config.TextColumn(
                "ADK verdict", width=170, help="Each metric against its own threshold; the "
                "case passes only when every metric passes (adk eval's rule). The judge score "
                "is what GEPA optimises."),
            "human_score": st.column_config.NumberColumn(
                "human score ✎", min_value=0.0, max_value=1.0, step=0.05, format="%.3f",
                width=115,
                help="Your score in [0, 1]; it replaces the judge's everywhere."),
            "human_feedback": st.column_config.TextColumn(
                "human feedback ✎", width=180,
                help="Your feedback; the next reflection reads it."),
            "judge_feedback": st.column_config.TextColumn("judge feedback", width=200),
            "output": st.column_config.TextColumn(
                "output", width=330, help="The agent's output (one line; the trial's full "
                "output is under Correct one trial and on the Run page)."),
            "input": st.column_config.TextColumn("input", width="small"),
        })
    changes = override_changes(frame, edited)
    label = f"Save {len(changes)} correction(s)" if changes else "No corrections to save"
    if st.button(label, type="primary", disabled=not changes, icon=":material/save:",
                 key="review.save_many"):
        save(run_id, [(c.trial_id, c.score, c.feedback) for c in changes])


def single(run_id: str, trials: list[Any]) -> None:
    """One trial: pick it, see its images, set its score and/or feedback."""
    if not trials:
        return
    numbers = loaders.trial_numbers(run_id, [t.id for t in trials])
    labels = {t.id: f"{numbered('Trial', numbers.get(t.id), t.id)} · iteration {t.iteration} · "
                    f"{t.phase.value} · {t.split.value} {t.example_index} · "
                    f"judge {format_score(t.score)}"
              for t in trials}
    st.markdown("**Correct one trial**")
    trial_id = st.selectbox("Trial", list(labels), format_func=labels.__getitem__,
                            key="review.single.trial")
    chosen = next(t for t in trials if t.id == trial_id)
    thumbnails = loaders.thumbnails(chosen.example_id)
    form_area = st.container()
    if thumbnails:
        pictures, form_area = st.columns([1, 3])
        with pictures:
            show_thumbnails(thumbnails)
    with form_area:
        review_queue.existing_correction(chosen)
    with form_area.form("review.single", border=True, clear_on_submit=True):
        cols = st.columns([1, 3])
        score = cols[0].number_input("Human score", 0.0, 1.0, value=None, step=0.05,
                                     key="review.single.score", placeholder="keep the judge's")
        feedback = cols[1].text_input("Human feedback", key="review.single.feedback",
                                      max_chars=MAX_FEEDBACK_CHARS,
                                      placeholder="optional: what the critic missed")
        corrected = st.text_area("What the answer should have been", height=90,
                                 key="review.single.corrected", max_chars=MAX_OUTPUT_CHARS,
                                 placeholder="optional: the corrected output")
        if st.form_submit_button("Save correction", icon=":material/save:"):
            save(run_id, [(trial_id, *merge_correction(chosen.override, score, feedback))],
                 corrected_output=corrected)


def save(run_id: str, changes: list[tuple[int, float | None, str | None]], *,
         corrected_output: str | None = None) -> None:
    """Store the corrections (``corrected_output``: one trial's, from *Correct one trial*)."""
    before = loaders.effect(run_id)
    failures = []
    for trial_id, score, feedback in changes:
        try:
            override(trial_id, score=score, feedback=feedback, author=session.author(),
                     store=loaders.store(), corrected_output=corrected_output,
                     reviewer=session.reviewer())
        except StudioError as exc:
            failures.append(f"trial {trial_id}: {exc}")
    if failures:
        st.error(escape_markdown("; ".join(failures)), icon=":material/error:")
        if len(failures) == len(changes):
            return
    st.session_state[f"{session.REVIEW_EFFECT}.{run_id}"] = before
    st.session_state[NONCE] = st.session_state.get(NONCE, 0) + 1
    saved = len(changes) - len(failures)
    session.flash(f"Saved {saved} correction(s) as {escape_markdown(session.author())}.")
    st.rerun()


def history(run_id: str) -> None:
    """Every correction of this run: judge vs human, who and when; undo the active ones."""
    overrides = loaders.overrides(run_id)
    if not overrides:
        st.caption("No corrections yet in this run.")
        return
    ids = sorted({o.trial_id for o in overrides})
    numbers = loaders.trial_numbers(run_id, ids)
    info = {stored_id(t): {"iteration": t.iteration,
                           "example": f"{t.split.value} {t.example_index}",
                           "number": numbers.get(stored_id(t))}
            for t in loaders.trials_by_id(run_id, ids)}
    st.dataframe(overrides_frame(overrides, info), hide_index=True, width="stretch",
                 placeholder="—", column_config={
                     "judge_score": st.column_config.NumberColumn("judge", format="%.3f"),
                     "human_score": st.column_config.NumberColumn("human", format="%.3f"),
                     "trial_id": st.column_config.NumberColumn("id", format="%d")})
    active = [o for o in overrides if o.undone_at is None and _may_undo(o)]
    if not active:
        return
    labels = {o.id: f"override {o.id} on "
                    f"{numbered('trial', numbers.get(o.trial_id), o.trial_id)} by {o.author}: "
                    f"{format_score(o.judge_score)} → "
                    f"{format_score(o.score, missing='(feedback only)')}"
              for o in reversed(active)}
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    chosen = left.selectbox("Undo a correction", list(labels), format_func=labels.__getitem__,
                            key="review.undo_pick")
    if right.button("Undo", icon=":material/undo:", width="stretch", key="review.undo"):

        before = loaders.effect(run_id)
        try:
            if chosen is None:  # stored overrides only: never
                return
            undo_override(chosen, store=loaders.store())
        except StudioError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/error:")
            return
        st.session_state[f"{session.REVIEW_EFFECT}.{run_id}"] = before
        st.session_state[NONCE] = st.session_state.get(NONCE, 0) + 1
        session.flash(f"Undid override {chosen}; the judge's value (or the previous correction) "
                    "applies again.")
        st.rerun()


def _may_undo(o: Any) -> bool:
    """An owner may undo any correction; a reviewer their own (the local studio: any)."""
    actor = session.actor()
    return actor.local or actor.can(Permission.ADJUDICATE) or (
        actor.can(Permission.LABEL) and o.reviewer == actor.reviewer)


def watch_new_trials(run_id: str, loaded: int) -> None:
    """Say when new trials arrived, without redrawing the editor under the person's edits."""

    @st.fragment(run_every=2)
    def watcher() -> None:
        count = loaders.count_trials(run_id)
        if count > loaded:
            cols = st.columns([4, 1], vertical_alignment="center")
            cols[0].caption(f"{count - loaded} new trial(s) since this list was loaded.")
            if cols[1].button("Refresh", icon=":material/refresh:", key="review.refresh"):
                st.session_state[NONCE] = st.session_state.get(NONCE, 0) + 1
                st.rerun(scope="app")

    watcher()
