"""Session-state keys (``"<page>.<key>"``) and the app-wide state: current run, project, author.

The current run and project also live in the URL (``?run=...&project=...``), so a refresh or a
link opened in a second tab shows the same run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from studio.model.team import Actor
from studio.projects.team import local_actor, os_user

# app-wide (set in the sidebar frame)
AUTHOR = "app.author"
ACTOR = "app.actor"
"""The signed-in person (:class:`~studio.model.team.Actor`), set on every full run when sign-in
is configured; absent in the local studio, whose person is the name typed in the sidebar."""
RUN_ID = "app.run_id"
PROJECT_ID = "app.project_id"
RUN_PICKER = "app.run_picker"
FLASH = "app.flash"
OPEN_FIRST = "app.open_first"
"""Set on a new session without a run in its URL: the sidebar then opens the run that waits
for the person (or the newest), instead of saying "No run yet" while runs exist."""
PAGE = "app.page"
"""The page being drawn (``home``, ``run``, ...), set by the router before the page runs."""

# Projects page
PROJECTS_PICKER = "projects.picker"
PROJECTS_FIELD = "projects.field"
"""Prefix of the editor's widget keys: ``projects.field.<project id>.<field>``."""
PROJECTS_ROWS = "projects.rows"
PROJECTS_PROBE = "projects.probe"
PROJECTS_UPLOAD = "projects.upload"

# Run page
RUN_FILTER = "run.filter"
"""Prefix of the trial filters' widget keys."""
RUN_TABLE = "run.table"
"""Prefix of the trials table's widget key, per run: ``run.table.<run id>``."""
RUN_CACHE = "run.cache"
RUN_SELECTED = "run.selected"
"""Prefix of the selected trial's key, per run: ``run.selected.<run id>``."""
RUN_START = "run.start"

# Review page
REVIEW_SHOWN = "review.next.shown"
"""``(run id, trial id, monotonic time)`` of the trial on the "Review next" card."""
REVIEW_SWAPPED = "review.next.swapped"
"""``(run id, trial shown before, trial shown now)`` when the card changed without the
person's action: their next Save or Skip is refused once (entries typed for the trial shown
before must not land on this one)."""
REVIEW_EDITOR = "review.editor"
REVIEW_EFFECT = "review.effect_before"
REVIEW_FILTER = "review.filter"
REVIEW_LOADED = "review.loaded_count"

# Proposals page
PROPOSALS_WATCH = "proposals.signature"
PROPOSALS_EDIT = "proposals.edit"
PROPOSALS_REASON = "proposals.reason"
PROPOSALS_SHOWN = "proposals.shown"
"""Prefix, per run: ``proposals.shown.<run id>`` -> the proposal the page has shown this person
to decide, which their decision clicks carry. It stays while the page swaps in another
proposal on its own (another tab or the CLI decided), until the person's first click on the
new one is refused; after their own decision it is None (the next proposal is expected)."""

# Compare page
COMPARE_SELECTED = "compare.selected"
COMPARE_COMPONENT = "compare.component"
COMPARE_BLAME = "compare.blame"
"""Prefix of the blame view's picker: ``compare.blame.<run id>``."""
COMPARE_LINEAGE = "compare.lineage"
"""Prefix of the lineage chart's key, per run: ``compare.lineage.<run id>`` (its clicked node
is the chart's own selection, so another run starts with none)."""
COMPARE_HEATMAP = "compare.heatmap"
"""Prefix of the candidates x examples heatmap's key, per run: ``compare.heatmap.<run id>``."""

# Agreement page
AGREEMENT_SCOPE = "agreement.scope"
AGREEMENT_THRESHOLD = "agreement.threshold"

PERSISTENT_PREFIXES = (PROJECTS_FIELD, RUN_FILTER, REVIEW_FILTER, COMPARE_SELECTED,
                       AGREEMENT_SCOPE, AGREEMENT_THRESHOLD)
"""Widget keys that must survive a visit to another page (Streamlit drops unrendered widgets)."""


def default_author() -> str:
    return os_user()


def init_app_state() -> None:
    """Fill the app-wide keys from the URL on a fresh session (a refresh, a new tab)."""
    ss = st.session_state
    run = st.query_params.get("run") or None
    asked = st.query_params.get("project")
    project = int(asked) if asked and asked.isdigit() else None
    # The URL wins when it names a run or project (a link, a refresh, the back button); without
    # one, the session keeps its own.
    if RUN_ID not in ss and run is None:
        ss[OPEN_FIRST] = True
    if RUN_ID not in ss or run is not None:
        ss[RUN_ID] = run if run is not None else ss.get(RUN_ID)
    if PROJECT_ID not in ss or project is not None:
        ss[PROJECT_ID] = project if project is not None else ss.get(PROJECT_ID)
    ss.setdefault(AUTHOR, default_author())
    for key in list(ss.keys()):
        if isinstance(key, str) and key.startswith(PERSISTENT_PREFIXES):
            ss[key] = ss[key]  # re-own the value so it survives pages without the widget


def url_params() -> dict[str, str]:
    """The current run and project as URL query parameters."""
    values = {"run": current_run_id(), "project": current_project_id()}
    return {name: str(value) for name, value in values.items() if value is not None}


def sync_url() -> None:
    """Write the current run and project into this page's URL (kept across refreshes).

    Only for a change made on the page itself: navigation carries the parameters in its links
    (writing them during a navigation run would leave the browser on the previous page's path).
    """
    wanted = url_params()
    if st.query_params.to_dict() != wanted:
        st.query_params.from_dict(wanted)


def open_first_run(run_id: str | None) -> None:
    """On a new session's first draw only: make ``run_id`` current unless a run already is
    (the URL's is kept). Not written into the URL: this run is not a navigation of the
    person's, and the sidebar's links carry the run from here on."""
    if st.session_state.pop(OPEN_FIRST, False) and current_run_id() is None:
        st.session_state[RUN_ID] = run_id


def wants_first_run() -> bool:
    return bool(st.session_state.get(OPEN_FIRST))


def current_run_id() -> str | None:
    return st.session_state.get(RUN_ID)


def set_current_run(run_id: str | None) -> None:
    """Make ``run_id`` the current run, here and in the URL."""
    st.session_state[RUN_ID] = run_id
    sync_url()


def current_project_id() -> int | None:
    return st.session_state.get(PROJECT_ID)


def set_current_project(project_id: int | None) -> None:
    st.session_state[PROJECT_ID] = project_id
    sync_url()


def actor() -> Actor:
    """Who is acting: the signed-in person, else the local studio's person (every action
    allowed, under the name typed in the sidebar)."""
    signed_in = st.session_state.get(ACTOR)
    if isinstance(signed_in, Actor):
        return signed_in
    return local_actor((st.session_state.get(AUTHOR) or "").strip() or "reviewer")


def author() -> str:
    """The name recorded with an action: the signed-in person's, never a typed one when
    sign-in is on."""
    return actor().name


def reviewer() -> str | None:
    """The key the acting person's labels are kept under (None in the local studio)."""
    return actor().reviewer


def init(key: str, value: Any) -> None:
    """Give a widget key its first value (widgets then read it; never pass ``value=`` too)."""
    if key not in st.session_state:
        st.session_state[key] = value


FLASH_SECONDS = 6.0


@dataclass(frozen=True)
class Flash:
    """A message about an action, for the page and the run where it happened."""

    kind: str
    """``success``, ``info``, ``warning`` or ``error`` (the ``st`` call that shows it)."""
    message: str
    page: str
    run_id: str | None
    until: float
    """``time.monotonic()`` after which it is no longer shown."""
    about: int | None = None
    """The proposal it speaks of, if any: the message is retired once another one waits."""


def page_name(page: str) -> str:
    """``run`` for the page path ``../pages/run.py`` (the router's name for it)."""
    return Path(page).stem


FORGOTTEN_ON_ENTRY = (PROPOSALS_SHOWN, REVIEW_SHOWN, REVIEW_SWAPPED)
"""What a page showed, forgotten when the person comes to the page anew: they look afresh."""


def enter_page(name: str) -> None:
    """Record the page being drawn (the router calls it before the page runs)."""
    ss = st.session_state
    if ss.get(PAGE) != name:
        for key in [k for k in ss if isinstance(k, str)
                    and k.startswith(FORGOTTEN_ON_ENTRY)]:
            del ss[key]
    ss[PAGE] = name


def current_page() -> str | None:
    return st.session_state.get(PAGE)


def flash(message: str, kind: str = "success", *, page: str | None = None,
          about: int | None = None) -> None:
    """Say what an action did, on the page and the run where it happened: the current page, or
    ``page`` (a page path) when the action moves the person there. Shown on that page's full
    runs for a few seconds (after st.rerun or a page switch; a live page may re-run right away,
    and the message must not vanish with it), and dropped as soon as the person is on another
    page or run, so it never follows them."""
    where = page_name(page) if page is not None else current_page() or ""
    st.session_state[FLASH] = Flash(kind, message, where, current_run_id(),
                                    time.monotonic() + FLASH_SECONDS, about)


def retire_flash_unless_about(proposal_id: int) -> None:
    """Drop a message about another proposal than ``proposal_id`` (the one waiting now): what
    it said is over ("your edit is being scored" once the edit is back as a new proposal)."""
    item = st.session_state.get(FLASH)
    if isinstance(item, Flash) and item.about is not None and item.about != proposal_id:
        del st.session_state[FLASH]


def show_flash() -> None:
    # Always one slot, so the elements after it keep their place in the page whether a message
    # is shown or not (a moved live table would be redrawn and lose its scroll position).
    slot = st.container()
    item = st.session_state.get(FLASH)
    if not isinstance(item, Flash):
        return
    elsewhere = item.page != current_page() or item.run_id != current_run_id()
    if elsewhere or time.monotonic() > item.until:
        del st.session_state[FLASH]
        return
    getattr(slot, item.kind, slot.info)(item.message)
