"""The "Review next" annotation queue: one trial at a time, the most valuable label first, from
the keyboard.

Keys: type a score, Tab to the feedback, Tab to the corrected output (what the answer should
have been); Enter saves and shows the next trial (Ctrl+Enter in the corrected output; Enter with
every field empty confirms the judge's values); Esc skips the trial for now; Alt+P and Alt+N go
to the previous and the next trial of this sitting; ``?`` opens the cheatsheet. After every
action the focus returns to the score field (a small script on the page: Streamlit keeps the
focus where Enter was pressed, which was the feedback). The time from a trial being shown to the
person's action is recorded for that trial (the run's ETA uses its mean).
"""

from __future__ import annotations

import time
from enum import StrEnum

import streamlit as st

from components import diff_view, loaders, session
from studio.engine.people.gates import override
from studio.model.errors import ConfigError, StudioError
from studio.model.limits import MAX_FEEDBACK_CHARS, MAX_OUTPUT_CHARS, clip
from studio.model.records import Trial, stored_id
from studio.projects.reviewing import record_review
from studio.views.markdown import escape_markdown
from studio.views.review_queue import (
    GROUP_LABELS,
    QueueItem,
    Sitting,
    next_item,
    queue_summary,
    review_progress,
)
from studio.views.tables import format_score

KEY = "review.next"
SCORE = f"{KEY}.score"
FEEDBACK = f"{KEY}.feedback"
CORRECTED = f"{KEY}.corrected"
SHOWN = session.REVIEW_SHOWN
SWAPPED = session.REVIEW_SWAPPED
SKIPPED = f"{KEY}.skipped"
SITTING = f"{KEY}.sitting"
NOTICE = f"{KEY}.notice"
FOCUS = f"{KEY}.focus"
"""Counts the actions: each one draws the focus script anew, which puts the focus on the score."""
SHOWN_CHARS = 3_000
"""Characters of an input, output or feedback shown in the card (the trial table has all)."""
SCORE_LABEL = "Your score"
DIMENSION = f"{KEY}.dimension"
"""Prefix of the per-dimension score fields: ``review.next.dimension.<name>``."""
MAX_DIMENSION_INPUTS = 12
HIDDEN = "hidden until you label"
CHEATSHEET = "Keyboard shortcuts (?)"
KEYS = """| Key | Does |
|---|---|
| type a number | your score in [0, 1] (empty: keep the judge's) |
| Tab / Shift+Tab | score → feedback → corrected output |
| Enter | save and show the next trial (Enter on empty fields confirms the judge) |
| Ctrl+Enter | save and next, from the corrected output |
| Esc | skip this trial for now |
| Alt+P / Alt+N | previous / next trial of this sitting |
| ? | this cheatsheet |"""


class Action(StrEnum):
    """What the form's buttons (and their keys) do."""

    SAVE = "save"
    SKIP = "skip"
    PREVIOUS = "previous"
    NEXT = "next"


def panel(run_id: str) -> None:
    """The queue's summary and progress, the trial to review now, and the keyboard form."""
    queue = loaders.review_queue(run_id, session.reviewer())
    st.subheader("Review next")
    _team_note(run_id)
    sitting = _sitting(run_id)
    head = next_item(queue, _skipped(run_id))
    back = sitting.current()
    trial = loaders.trial(run_id, back) if back is not None else None
    if back is not None and trial is None:
        sitting.cursor, back = None, None
    corrected = {o.trial_id for o in loaders.overrides(run_id, include_undone=False)}
    progress = review_progress(len(queue), loaders.reviews(run_id), corrected)
    st.caption(f"**{progress.text()}** · {queue_summary(queue)}")
    with st.expander(CHEATSHEET):
        st.markdown(KEYS)
    _notice()
    _focus_script()
    if trial is None:
        if head is None:
            return
        sitting.note(stored_id(head.trial))
        trial = head.trial  # a queued trial has no correction yet
    trial_id = stored_id(trial)
    _mark_shown(run_id, trial_id)
    _say_swapped(run_id, trial_id)
    hidden = loaders.blinded(run_id, session.actor()) and not _labelled_by_me(run_id, trial_id)
    _card(run_id, trial, head if back is None else None, hidden=hidden)
    _form(run_id, sitting, head, dimensions=_dimensions(run_id, trial), blind=hidden)


def _card(run_id: str, trial: Trial, item: QueueItem | None, *, hidden: bool = False) -> None:
    """The trial: input, expected answer, output, the judge's score, feedback and dimensions,
    and the correction it already has; with ``hidden`` (a blind review, not labelled yet by
    this person) neither the judge's values nor anyone's label, nor the queue's reasons (they
    quote the judge's score)."""
    index = loaders.candidate_indexes(run_id).get(trial.candidate_id)
    badge = (f":orange-badge[{GROUP_LABELS[item.group]}]" if item is not None
             else ":gray-badge[shown earlier in this sitting]")
    judge = HIDDEN if hidden else format_score(trial.score)
    title = loaders.trial_title(run_id, stored_id(trial))
    with st.container(border=True):
        st.markdown(f"**{title}** · {trial.split.value} example "
                    f"{trial.example_index} · {trial.phase.value} · candidate #{index} · judge "
                    f"{judge} · {badge}")
        if item is not None and not hidden:
            st.markdown("\n".join(f"- {escape_markdown(reason)}" for reason in item.reasons))
        expected = loaders.expected_answer(trial.example_id)
        left, middle, right = st.columns(3)
        _text(left, "Input", trial.input_text)
        _text(middle, "Expected answer", expected, empty="(this example has no expected answer)")
        _text(right, f"Output · judge {judge}", trial.output, empty="(no output)")
        if hidden:
            st.caption(":material/visibility_off: Blind review: the judge's score and feedback "
                       "and the other reviewers' labels show once you have given yours.")
            return
        feedback, dims = st.columns([3, 1])
        _text(feedback, "Judge's feedback", trial.feedback_text, empty="(none)")
        dims.caption("Judge's dimension scores")
        dims.markdown("\n".join(f"- {escape_markdown(name)}: {format_score(value)}"
                                for name, value in trial.feedback.dimensions.items())
                      or "(none)")
        existing_correction(trial)


def existing_correction(trial: Trial) -> None:
    """The trial's active correction, if any: who, the score and feedback, and the corrected
    output as a diff against the output (the Review page's forms show it too)."""
    o = trial.override
    if o is None:
        return
    parts = [f"score {format_score(o.score)}" if o.score is not None else "",
             f"feedback “{clip(o.feedback, 200)}”" if o.feedback else ""]
    st.info(escape_markdown(f"Corrected by {o.author} at {o.created_at:%Y-%m-%d %H:%M}: "
                            + ("; ".join(p for p in parts if p) or "a corrected output")),
            icon=":material/edit_note:")
    if o.corrected_output:
        diff_view.side_by_side(trial.output, o.corrected_output, left="Output",
                               right="What the answer should have been")


def _text(column, label: str, text: str | None, *, empty: str = "(empty)") -> None:
    column.caption(label)
    column.code(clip(text, SHOWN_CHARS) if text else empty, language=None, wrap_lines=True)


def _form(run_id: str, sitting: Sitting, head: QueueItem | None, *,
          dimensions: tuple[str, ...] = (), blind: bool = False) -> None:
    # not clear_on_submit: a refused label stays for the person to fix; a saved one is cleared
    at_queue = head.trial.id if head is not None else None
    with st.form(f"{KEY}.form", border=True):
        cols = st.columns([2, 5])
        cols[0].number_input(SCORE_LABEL, 0.0, 1.0, value=None, step=0.05, key=SCORE,
                             placeholder="required (blind)" if blind else "keep the judge's")
        cols[1].text_input("Your feedback", key=FEEDBACK, max_chars=MAX_FEEDBACK_CHARS,
                           placeholder="optional: what the critic missed")
        st.text_area("What the answer should have been", key=CORRECTED, height=90,
                     max_chars=MAX_OUTPUT_CHARS,
                     placeholder="optional: the corrected output (Ctrl+Enter saves); the next "
                                 "reflection reads it")
        if dimensions:
            dims = st.columns(min(len(dimensions), 4))
            for i, name in enumerate(dimensions):
                dims[i % len(dims)].number_input(f"Your {name}", 0.0, 1.0, value=None,
                                                 step=0.05, key=f"{DIMENSION}.{name}",
                                                 placeholder="optional")
        buttons = st.columns(4)
        buttons[0].form_submit_button("Save and next", type="primary", icon=":material/done:",
                                      on_click=_submit, args=(run_id, Action.SAVE), width="stretch")
        buttons[1].form_submit_button("Skip for now", icon=":material/skip_next:",
                                      on_click=_submit, args=(run_id, Action.SKIP), shortcut="Esc",
                                      width="stretch", disabled=sitting.current() is not None)
        buttons[2].form_submit_button("Previous", icon=":material/arrow_back:",
                                      on_click=_submit, args=(run_id, Action.PREVIOUS),
                                      shortcut="Alt+P", width="stretch",
                                      disabled=not sitting.can_go_back(at_queue))
        buttons[3].form_submit_button("Next", icon=":material/arrow_forward:",
                                      on_click=_submit, args=(run_id, Action.NEXT),
                                      shortcut="Alt+N", width="stretch",
                                      disabled=sitting.current() is None)


def _submit(run_id: str, action: Action) -> None:
    """Save the person's label, skip, or move; record the time spent; the rerun shows the
    next trial with the focus on the score."""
    ss = st.session_state
    shown = ss.get(SHOWN)
    if not shown or shown[0] != run_id:
        return
    _, trial_id, started = shown
    sitting = _sitting(run_id)
    ss[FOCUS] = ss.get(FOCUS, 0) + 1
    if action in (Action.PREVIOUS, Action.NEXT):  # the person moves: the next card is theirs
        ss.pop(SHOWN, None)
        ss.pop(SWAPPED, None)
        if action is Action.PREVIOUS:
            sitting.back(trial_id)
        else:
            sitting.forward()
        _clear_fields()
        return
    if _swapped_to(run_id) == trial_id:
        ss.pop(SWAPPED)  # said once: the next Save or Skip is the person's, on this trial
        ss[NOTICE] = ("error", f"the page changed: {loaders.trial_title(run_id, trial_id)} is "
                               "now shown. Nothing was saved: check your entries, then save "
                               "again to put them on this trial")
        return
    seconds = max(0.0, time.monotonic() - started)
    score = ss.get(SCORE)
    feedback = (ss.get(FEEDBACK) or "").strip() or None
    corrected = (ss.get(CORRECTED) or "").strip() or None
    dimensions = {key.removeprefix(f"{DIMENSION}."): value for key, value in ss.items()
                  if isinstance(key, str) and key.startswith(f"{DIMENSION}.")
                  and value is not None} or None
    browsing = sitting.current() is not None
    settings = loaders.review_settings(run_id)
    blind = loaders.blinded(run_id, session.actor()) and not _labelled_by_me(run_id, trial_id)
    try:
        if action is Action.SKIP:
            done = "skipped"
            ss.setdefault(SKIPPED, {}).setdefault(run_id, []).append(trial_id)
        elif score is None and blind:
            raise ConfigError("this review is blind: give your score (the judge's is hidden "
                              "until you have)", where="score")
        elif score is None and feedback is None and corrected is None and not dimensions:
            done = "kept" if browsing else "confirmed"
            if done == "confirmed" and settings.team and session.reviewer() is not None:
                _confirm_as_label(run_id, trial_id)  # several reviewers: a confirmation counts
        else:
            done = "corrected"
            override(trial_id, score=score, feedback=feedback, corrected_output=corrected,
                     author=session.author(), store=loaders.store(),
                     reviewer=session.reviewer(), dimensions=dimensions)
        if done != "kept":
            record_review(loaders.store(), run_id, trial_id, seconds=seconds, action=done,
                          author=session.author())
    except StudioError as exc:
        ss[NOTICE] = ("error", f"{loaders.trial_title(run_id, trial_id)}: {exc}")
        return
    title = loaders.trial_title(run_id, trial_id).lower()
    ss[NOTICE] = ("success", _done_text(title, done, score, feedback, corrected, seconds))
    ss.pop(SHOWN, None)
    sitting.forward()
    _clear_fields()


def _clear_fields() -> None:
    ss = st.session_state
    ss[SCORE], ss[FEEDBACK], ss[CORRECTED] = None, "", ""  # empty for the next trial
    for key in [k for k in ss if isinstance(k, str) and k.startswith(f"{DIMENSION}.")]:
        ss[key] = None


def _confirm_as_label(run_id: str, trial_id: int) -> None:
    """Several people review each trial: a reviewer who confirms the judge gives the judge's
    score as their label, so it counts in the consensus and in the agreement between people."""
    trial = loaders.trial(run_id, trial_id)
    if trial is not None and trial.score is not None:
        override(trial_id, score=trial.score, feedback=None, author=session.author(),
                 store=loaders.store(), reviewer=session.reviewer())


def _labelled_by_me(run_id: str, trial_id: int) -> bool:
    """The acting person already gave this trial a label (blind review shows it then)."""
    me = session.reviewer()
    if me is None:
        return False
    return any(o.trial_id == trial_id and o.reviewer == me
               for o in loaders.overrides(run_id, include_undone=False))


def _dimensions(run_id: str, trial: Trial) -> tuple[str, ...]:
    """The critic dimensions a reviewer may score one by one: the judge's, when several people
    review each trial (their agreement is then reported per dimension)."""
    if not loaders.review_settings(run_id).team:
        return ()
    return tuple(trial.feedback.dimensions)[:MAX_DIMENSION_INPUTS]


def _team_note(run_id: str) -> None:
    """How this run is reviewed, when by several people or blind."""
    settings = loaders.review_settings(run_id)
    if settings.team:
        st.caption(f":material/group: Each trial is reviewed by {settings.reviewers_per_trial} "
                   f"people{'; blind' if settings.blind else ''}: the loop reads their "
                   "consensus (the mean, or the majority of pass/fail), or an owner's "
                   "adjudication.")


def _done_text(trial: str, action: str, score: float | None, feedback: str | None,
               corrected: str | None, seconds: float) -> str:
    if action == "corrected":
        what = ", ".join(part for part in (
            f"score {score:.2f}" if score is not None else "",
            "feedback" if feedback else "",
            "corrected output" if corrected else "") if part)
        return f"Saved the correction of {trial} ({what}) in {seconds:.0f} s."
    if action == "confirmed":
        return f"Confirmed the judge on {trial} in {seconds:.0f} s."
    if action == "kept":
        return f"Kept {trial} as it was."
    return f"Skipped {trial} for now."


def _notice() -> None:
    slot = st.container()  # one slot, so the fields below keep their place (and the focus)
    notice = st.session_state.pop(NOTICE, None)
    if notice is not None:
        kind, text = notice
        getattr(slot, kind)(escape_markdown(text))


FOCUS_SCRIPT = """<script>/* review action %d */
(() => {
  const doc = document;
  let tries = 0;
  const focusScore = () => {
    const field = doc.querySelector('input[aria-label="%s"]');
    if (field) { field.focus({preventScroll: true}); field.select(); }
    else if (tries++ < 100) setTimeout(focusScore, 30);
  };
  focusScore();
  if (window.studioReviewKeys) return;
  window.studioReviewKeys = true;
  doc.addEventListener("keydown", (event) => {
    if (event.key !== "?") return;
    const target = event.target;
    const typing = target && (target.isContentEditable || target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && target.getAttribute("aria-label") !== "%s"));
    const summary = [...doc.querySelectorAll("summary")].find(
      (s) => s.innerText.includes("%s"));
    if (typing || !summary) return;
    event.preventDefault();
    summary.click();
  }, true);
})();
</script>"""
"""Puts the focus on the score field, and opens the cheatsheet on ``?`` (outside a text field;
the score field takes no ``?``). No model text goes into it."""


def _focus_script() -> None:
    count = st.session_state.get(FOCUS, 0)
    st.html(FOCUS_SCRIPT % (count, SCORE_LABEL, SCORE_LABEL, CHEATSHEET.split(" (")[0]),
            unsafe_allow_javascript=True)


def _sitting(run_id: str) -> Sitting:
    return st.session_state.setdefault(SITTING, {}).setdefault(run_id, Sitting([]))


def _skipped(run_id: str) -> list[int]:
    return st.session_state.get(SKIPPED, {}).get(run_id, [])


def _mark_shown(run_id: str, trial_id: int) -> None:
    """Record the trial on the card and when it came. The person's own actions clear the
    record first, so a card that changes while one is kept changed on its own (the queue
    moved: another tab reviewed the trial, new trials ranked higher), and is noted."""
    shown = st.session_state.get(SHOWN)
    if not shown or shown[:2] != (run_id, trial_id):
        if shown and shown[0] == run_id:
            st.session_state[SWAPPED] = (run_id, shown[1], trial_id)
        st.session_state[SHOWN] = (run_id, trial_id, time.monotonic())


def _swapped_to(run_id: str) -> int | None:
    """The trial the card changed to on its own, while that change is not acknowledged."""
    swapped = st.session_state.get(SWAPPED)
    return swapped[2] if swapped and swapped[0] == run_id else None


def _say_swapped(run_id: str, trial_id: int) -> None:
    """Warn, above the card, that it changed under the person: a form's typed entries stay in
    the browser when the card changes, and must not be saved on this trial unseen."""
    swapped = st.session_state.get(SWAPPED)
    if swapped is None or _swapped_to(run_id) != trial_id:
        return
    before = loaders.trial_title(run_id, swapped[1])
    st.warning(f"The page changed: {loaders.trial_title(run_id, trial_id)} is now shown; "
               f"{before}, which the card showed, is no longer the next to review. What you "
               "typed stays in the fields: your first Save or Skip is refused, so that entries "
               f"meant for {before} never land on this trial.", icon=":material/swap_horiz:")
