"""The "Review next" queue: one trial at a time, the most valuable label first, from the keyboard.

Keys: type a score, Tab to the feedback, Enter saves and shows the next trial (Enter with both
fields empty confirms the judge's values); Esc skips the trial for now. The two fields keep
their keys from one trial to the next, so the browser keeps the focus where Enter was pressed
and the next trial is typed at once: no mouse, no custom script. The time from a trial being
shown to the person's Enter or Esc is recorded for that trial (the run's ETA uses its mean).
"""

from __future__ import annotations

import time

import streamlit as st

from components import loaders, session
from studio.engine.gates import override
from studio.model.errors import StudioError
from studio.model.limits import MAX_FEEDBACK_CHARS, clip
from studio.projects.reviewing import record_review
from studio.views.markdown import escape_markdown
from studio.views.review_queue import GROUP_LABELS, QueueItem, next_item, queue_summary
from studio.views.tables import format_score

KEY = "review.next"
SCORE = f"{KEY}.score"
FEEDBACK = f"{KEY}.feedback"
SHOWN = f"{KEY}.shown"
"""``(run id, trial id, monotonic time)`` of the trial on screen."""
SKIPPED = f"{KEY}.skipped"
NOTICE = f"{KEY}.notice"
SHOWN_CHARS = 3_000
"""Characters of an input, output or feedback shown in the card (the trial table has all)."""


def panel(run_id: str) -> None:
    """The queue's summary, the trial to review now, and the keyboard form."""
    queue = loaders.review_queue(run_id)
    st.subheader("Review next")
    item = next_item(queue, _skipped(run_id))
    keys = " Keys: score, Tab, feedback, Enter saves and shows the next (Enter on empty fields " \
           "confirms the judge); Esc skips for now."
    st.caption(queue_summary(queue) + (keys if item is not None else ""))
    _notice()
    if item is None:
        return
    _mark_shown(run_id, item)
    _card(run_id, item)
    _form(run_id)


def _card(run_id: str, item: QueueItem) -> None:
    trial = item.trial
    index = loaders.candidate_indexes(run_id).get(trial.candidate_id)
    with st.container(border=True):
        st.markdown(f"**Trial #{trial.id}** · {item.example} · {trial.phase.value} · candidate "
                    f"#{index} · judge {format_score(trial.score)} · "
                    f":orange-badge[{GROUP_LABELS[item.group]}]")
        st.markdown("\n".join(f"- {escape_markdown(reason)}" for reason in item.reasons))
        left, right = st.columns(2)
        left.caption("Input")
        left.code(clip(trial.input_text, SHOWN_CHARS), language=None, wrap_lines=True)
        right.caption("Output")
        right.code(clip(trial.output, SHOWN_CHARS), language=None, wrap_lines=True)
        st.caption("Judge's feedback")
        st.code(clip(trial.feedback_text or "(none)", SHOWN_CHARS), language=None,
                wrap_lines=True)


def _form(run_id: str) -> None:
    # not clear_on_submit: a refused label stays for the person to fix; a saved one is cleared
    with st.form(f"{KEY}.form", border=True):
        cols = st.columns([2, 5])
        cols[0].number_input("Your score", 0.0, 1.0, value=None, step=0.05, key=SCORE,
                             placeholder="keep the judge's")
        cols[1].text_input("Your feedback", key=FEEDBACK, max_chars=MAX_FEEDBACK_CHARS,
                           placeholder="optional: what the critic missed")
        buttons = st.columns([1, 1, 3])
        buttons[0].form_submit_button("Save and next", type="primary", icon=":material/done:",
                                      on_click=_submit, args=(run_id, False),
                                      width="stretch")
        buttons[1].form_submit_button("Skip for now", icon=":material/skip_next:",
                                      on_click=_submit, args=(run_id, True), shortcut="Esc",
                                      width="stretch")


def _submit(run_id: str, skip: bool) -> None:
    """Save the person's label (or skip), record the time spent; the rerun shows the next."""
    ss = st.session_state
    shown = ss.get(SHOWN)
    if not shown or shown[0] != run_id:
        return
    _, trial_id, started = shown
    seconds = max(0.0, time.monotonic() - started)
    score, feedback = ss.get(SCORE), (ss.get(FEEDBACK) or "").strip() or None
    try:
        if skip:
            action = "skipped"
            ss.setdefault(SKIPPED, {}).setdefault(run_id, []).append(trial_id)
        elif score is None and feedback is None:
            action = "confirmed"
        else:
            action = "corrected"
            override(trial_id, score=score, feedback=feedback, author=session.author(),
                     store=loaders.store())
        record_review(loaders.store(), run_id, trial_id, seconds=seconds, action=action,
                      author=session.author())
    except StudioError as exc:
        ss[NOTICE] = ("error", f"Trial #{trial_id}: {exc}")
        return
    ss[NOTICE] = ("success", _done_text(trial_id, action, score, feedback, seconds))
    ss.pop(SHOWN, None)
    ss[SCORE], ss[FEEDBACK] = None, ""  # empty for the next trial


def _done_text(trial_id: int, action: str, score: float | None, feedback: str | None,
               seconds: float) -> str:
    if action == "corrected":
        what = ", ".join(part for part in (
            f"score {score:.2f}" if score is not None else "",
            "feedback" if feedback else "") if part)
        return f"Saved trial #{trial_id}'s correction ({what}) in {seconds:.0f} s."
    if action == "confirmed":
        return f"Confirmed the judge on trial #{trial_id} in {seconds:.0f} s."
    return f"Skipped trial #{trial_id} for now."


def _notice() -> None:
    slot = st.container()  # one slot, so the fields below keep their place (and the focus)
    notice = st.session_state.pop(NOTICE, None)
    if notice is not None:
        kind, text = notice
        getattr(slot, kind)(escape_markdown(text))


def _skipped(run_id: str) -> list[int]:
    return st.session_state.get(SKIPPED, {}).get(run_id, [])


def _mark_shown(run_id: str, item: QueueItem) -> None:
    shown = st.session_state.get(SHOWN)
    if not shown or shown[:2] != (run_id, item.trial.id):
        st.session_state[SHOWN] = (run_id, item.trial.id, time.monotonic())

