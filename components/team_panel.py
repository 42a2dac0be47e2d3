"""A team's review on the pages: each reviewer's progress, agreement between people, the trials
they disagree on (an owner adjudicates there), comments on a proposal, and the Team page's users
and review settings."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import frame, loaders, session
from components.trial_detail import text_block
from studio.engine.people.gates import adjudicate, undo_override
from studio.model.errors import StudioError
from studio.model.limits import MAX_FEEDBACK_CHARS
from studio.model.team import MAX_REVIEWERS_PER_TRIAL, Permission, Role
from studio.projects.team import add_user, comment_on_proposal, remove_user, save_review_settings
from studio.views.markdown import escape_markdown
from studio.views.tables import format_score
from studio.views.team import (
    dimension_frame,
    disagreement_label,
    people_frame,
    progress_frame,
)

KEY = "team"
PICKED = f"{KEY}.disagreement"
RULING = f"{KEY}.ruling"
COMMENT = f"{KEY}.comment"
STATISTICS = {name: st.column_config.NumberColumn(format="%.3f")
              for name in ("Krippendorff's alpha", "Cohen's kappa (two people)")}


# --------------------------------------------------------------------------- Review page


def progress(run_id: str) -> None:
    """Per reviewer: trials labelled, skips, time spent (when several people review)."""
    found = loaders.reviewer_progress(run_id)
    settings = loaders.review_settings(run_id)
    if not found and not settings.team:
        return
    with st.expander(f"Reviewers ({len(found)})", icon=":material/group:",
                     expanded=settings.team):
        st.caption(f"Each trial waits in the queue until {settings.reviewers_per_trial} "
                   f"people labelled it{' (blind)' if settings.blind else ''}.")
        if found:
            st.dataframe(progress_frame(found), hide_index=True, width="stretch")


# --------------------------------------------------------------------------- Agreement page


def people(run_id: str | None, threshold: float) -> None:
    """Krippendorff's alpha (and Cohen's kappa for two) between the people, beside the
    judge-vs-people figures, per project and per critic dimension."""
    summary = loaders.people_summary(run_id, threshold)
    overall = summary.overall
    if overall.labels == 0:  # no signed-in reviewer labelled anything: nothing to compare
        return
    st.subheader("Between people")
    if overall.units == 0:
        st.caption("No trial has labels from two or more signed-in reviewers yet: their "
                   "agreement shows here once it has (set several reviewers per trial on the "
                   "Team page).")
        return
    cols = st.columns(3)
    cols[0].metric("Krippendorff's alpha", format_score(overall.alpha, missing="n/a"),
                   help="Agreement beyond chance between the people's scores (interval "
                        "metric); 1 is perfect, 0 is chance.")
    cols[1].metric("Cohen's kappa", format_score(overall.kappa, missing="n/a"),
                   help=f"Two people's pass/fail verdicts at {threshold:g}; n/a unless exactly "
                        "two people labelled.")
    cols[2].metric("Trials labelled by 2+", overall.units,
                   help=f"{overall.labels} labels by {len(overall.reviewers)} reviewers")
    st.dataframe(people_frame(summary), hide_index=True, width="stretch", placeholder="n/a",
                 column_config=STATISTICS)
    if overall.per_dimension:
        st.caption("Per critic dimension (the people's own dimension scores)")
        st.dataframe(dimension_frame(overall), hide_index=True, width="stretch",
                     placeholder="n/a", column_config=STATISTICS)


def disagreements(run_id: str, threshold: float) -> None:
    """The trials the reviewers labelled differently; an owner settles one, everyone's labels
    kept."""
    found = loaders.disagreements(run_id, threshold)
    if not found and loaders.people_summary(run_id, threshold).overall.units == 0:
        return
    st.subheader(f"Disagreements between reviewers ({sum(not d.settled for d in found)} open)")
    if not found:
        st.caption("None: the reviewers agree on every trial they both labelled.")
        return
    numbers = loaders.trial_numbers(run_id, [d.trial_id for d in found])
    labels = {d.trial_id: disagreement_label(d, numbers.get(d.trial_id)) for d in found}
    picked = st.selectbox("Trial", list(labels), format_func=labels.__getitem__, key=PICKED)
    chosen = next(d for d in found if d.trial_id == picked)
    for label in chosen.labels:
        st.markdown(f"- **{escape_markdown(label.reviewer)}**: {format_score(label.score)}"
                    + (f" · “{escape_markdown(label.feedback)}”" if label.feedback else ""))
    trial = loaders.trial(run_id, picked)
    if trial is not None:
        left, right = st.columns(2)
        with left:
            text_block("Output", trial.output)
        with right:
            text_block(f"Judge's feedback · judge {format_score(trial.score)}",
                       trial.feedback_text)
    if chosen.settled:
        st.success(escape_markdown(f"Settled at {format_score(chosen.ruling)} by "
                                   f"{chosen.ruled_by}: the loop reads this value."),
                   icon=":material/gavel:")
    else:
        st.info(f"Open: the loop reads their consensus, {format_score(chosen.consensus)}.")
    if frame.allowed(Permission.ADJUDICATE):
        _ruling_form(run_id, chosen)


def _ruling_form(run_id: str, chosen: Any) -> None:
    with st.form(f"{RULING}.{picked_key(chosen)}", border=True):
        cols = st.columns([1, 3])
        score = cols[0].number_input("Adjudicated score", 0.0, 1.0, value=None, step=0.05,
                                     key=f"{RULING}.score")
        feedback = cols[1].text_input("Adjudicated feedback (optional)",
                                      max_chars=MAX_FEEDBACK_CHARS, key=f"{RULING}.feedback")
        buttons = st.columns(2)
        settle = buttons[0].form_submit_button("Settle", type="primary", icon=":material/gavel:")
        withdraw = buttons[1].form_submit_button("Withdraw the ruling", icon=":material/undo:",
                                                 disabled=not chosen.settled)
    try:
        if settle:
            adjudicate(chosen.trial_id, score=score, feedback=feedback or None,
                       author=session.author(), store=loaders.store())
            session.flash(f"Settled trial {chosen.trial_id}: the loop reads "
                          f"{format_score(score)} from now on; everyone's labels are kept.")
            st.rerun()
        if withdraw and chosen.ruling_id is not None:
            undo_override(chosen.ruling_id, store=loaders.store())
            session.flash("Withdrew the ruling: the loop reads the reviewers' consensus again.")
            st.rerun()
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")


def picked_key(chosen: Any) -> str:
    return f"{chosen.run_id}.{chosen.trial_id}"


# --------------------------------------------------------------------------- Proposals page


def comments(proposal: Any) -> None:
    """Reviewers' words on the proposal, for the owner who decides; a box to add one."""
    found = loaders.proposal_comments(proposal.run_id, proposal.id)
    with st.expander(f"Comments ({len(found)})", icon=":material/forum:", expanded=bool(found)):
        for c in found:
            st.markdown(f"**{escape_markdown(c.author)}** · {c.created_at:%Y-%m-%d %H:%M}: "
                        f"{escape_markdown(c.text)}")
        if not frame.allowed(Permission.COMMENT):
            return
        key = f"{COMMENT}.{proposal.id}"
        with st.form(key, clear_on_submit=True, border=False):
            text = st.text_area("Your comment", max_chars=MAX_FEEDBACK_CHARS, height=70,
                                placeholder="e.g. the second rule contradicts the first")
            if st.form_submit_button("Comment", icon=":material/send:"):
                try:
                    comment_on_proposal(loaders.store(), session.actor(), proposal.id, text)
                except StudioError as exc:
                    st.error(escape_markdown(str(exc)), icon=":material/error:")
                else:
                    st.rerun()


# --------------------------------------------------------------------------- Team page


def who_am_i() -> None:
    actor = session.actor()
    if actor.local:
        st.info("Sign-in is not configured: this is the local, single-user studio, where "
                "whoever uses it may do everything under the name typed in the sidebar. A "
                "team's studio configures sign-in ([auth] in .streamlit/secrets.toml; see the "
                "guide docs/guides/team.md).", icon=":material/person:")
    else:
        st.markdown(f"You are **{escape_markdown(actor.name)}**, "
                    f"{escape_markdown(actor.role.value if actor.role else '')}.")


def users() -> None:
    st.subheader("Users")
    found = loaders.users()
    if found:
        st.dataframe([{"user": u.name, "role": u.role.value,
                       "CLI token": "issued" if u.has_token else "-"} for u in found],
                     hide_index=True, width="stretch")
    else:
        st.caption("No users: every action is allowed to whoever uses this studio.")
    if not frame.allowed(Permission.MANAGE_TEAM):
        return
    with st.form(f"{KEY}.user", border=True):
        cols = st.columns([3, 1, 1], vertical_alignment="bottom")
        name = cols[0].text_input("User (the e-mail they sign in with)", key=f"{KEY}.name")
        role = cols[1].selectbox("Role", [r.value for r in Role], index=1, key=f"{KEY}.role")
        save = cols[2].form_submit_button("Save", type="primary", icon=":material/person_add:")
        remove = st.form_submit_button("Remove this user", icon=":material/person_remove:")
    try:
        if save:
            user = add_user(loaders.store(), session.actor(), name, role)
            _done(f"{user.name} is now a {user.role.value}.")
        if remove:
            remove_user(loaders.store(), session.actor(), name.strip())
            _done(f"{name.strip()} has no role here any more (their labels stay).")
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")


def review_settings() -> None:
    st.subheader("Review settings per project")
    saved = loaders.all_review_settings()
    if saved:
        st.dataframe([{"project": s.project, "reviewers per trial": s.reviewers_per_trial,
                       "blind": s.blind, "changed by": s.updated_by or "-"} for s in saved],
                     hide_index=True, width="stretch")
    st.caption("A project not listed is reviewed by one person per trial, not blind.")
    if not frame.allowed(Permission.MANAGE_TEAM):
        return
    names = sorted({p.name for p in loaders.projects()} | {s.project for s in saved})
    if not names:
        st.caption("No project yet.")
        return
    project = st.selectbox("Project", names, key=f"{KEY}.project")
    current = next((s for s in saved if s.project == project), None)
    with st.form(f"{KEY}.settings.{project}", border=True):  # a form per project: its values
        cols = st.columns([1, 1, 2], vertical_alignment="bottom")
        count = cols[0].number_input("Reviewers per trial", 1, MAX_REVIEWERS_PER_TRIAL,
                                     value=current.reviewers_per_trial if current else 1,
                                     key=f"{KEY}.count.{project}")
        blind = cols[1].checkbox("Blind", value=bool(current and current.blind),
                                 key=f"{KEY}.blind.{project}")
        if st.form_submit_button("Save settings", type="primary", icon=":material/save:"):
            try:
                save_review_settings(loaders.store(), session.actor(), project,
                                     reviewers_per_trial=int(count), blind=blind)
            except StudioError as exc:
                st.error(escape_markdown(str(exc)), icon=":material/error:")
            else:
                _done(f"{project}: {int(count)} reviewer(s) per trial"
                      f"{', blind' if blind else ''}.")


def _done(message: str) -> None:
    loaders.users.clear()
    loaders.all_review_settings.clear()
    loaders.review_settings.clear()
    session.flash(escape_markdown(message))
    st.rerun()
