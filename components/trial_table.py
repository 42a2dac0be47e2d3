"""The live trials panel: progress, filters, a page of the trials table that fills in as trials
are committed, and the selected trial in full.

The panel is a fragment that re-runs on its own every second while the run is active. Each
time it reads the run's marker (trial count, newest ids, override signature: one cheap query)
and re-reads the page it shows only when that marker, the filters or the page changed. Tabs
watching the same run share both: the marker is read once per ``loaders.LIVE_TTL_SECONDS`` for
all of them, and a page (its rows and tables) once per marker, filters and page number, so ten
tabs cost the store and pandas what one does. The
table shows one page of ``PAGE_ROWS`` trials, oldest first, filtered, counted and paged in SQL,
so a run of 100,000 trials is never read whole. Filters are widgets outside the fragment and
the selection is kept by trial id, so neither is lost when rows arrive. The selection and the
trial shown in full belong to their run (keys end with the run's id) and are forgotten when
another run is chosen: a run never shows another run's trial, nor a row ticked by position.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from components import frame, loaders, session
from components.trial_detail import show_trial
from studio.model.config import ReviewMode
from studio.model.records import RunStatus, TrialPhase
from studio.views.markdown import escape_markdown
from studio.views.skips import skipped_note
from studio.views.tables import (
    ERROR_CHOICES,
    LATEST_COLUMNS,
    OVERRIDE_CHOICES,
    TABLE_COLUMNS,
    TRIAL_COLUMNS,
    TRIAL_TABLE,
    TrialColumn,
    TrialFilters,
    current_phase,
    progress_summary,
    shown_columns,
    trial_frame,
)
from studio.views.workflows import scored_author

LIVE_SECONDS = 1.0
"""The live panel's refresh while the run is active. Each refresh redraws the panel in every
watching tab, and a run started from the browser shares the server's process (its GIL) with
those redraws: a faster refresh slows the run it shows (figures in ``bench/README.md``)."""
IDLE_SECONDS = 5.0
SHOWN_IDS = "run.shown_ids"
"""Prefix of the ids the table showed last, per run (``run.shown_ids.<run id>``)."""
RUN_PAGE = "run.page"
FRESH_READ = "run.fresh_read"
LATEST_ROWS = 5
PAGE_ROWS = 500
"""Trials in one page of the table (the rest are a page number away)."""


@dataclass
class TableCache:
    """The page of trials a session shows for one run, and what it was read for."""

    run_id: str
    frame: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=TRIAL_COLUMNS))
    latest: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=TRIAL_COLUMNS))
    total: int = 0
    """Trials in the run."""
    loop_total: int = 0
    """The loop's trials: its metric calls (the test set's are outside its budget)."""
    matching: int = 0
    """Trials passing the filters."""
    newest: int | None = None
    page: int = 1
    signature: tuple[int, ...] = ()
    """The run's marker (:func:`loaders.run_marker`) when the page was read."""
    key: Any = None
    index_of: dict[int, int] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.matching / PAGE_ROWS))


@dataclass(frozen=True)
class SharedPage:
    """One page of a run's trials as every tab shows it (read and built once, shared)."""

    frame: pd.DataFrame
    latest: pd.DataFrame
    matching: int
    page: int
    index_of: dict[int, int]


def sync(run_id: str, trial_filters: TrialFilters | None = None, page: int = 1,
         marker: tuple[int, ...] | None = None) -> TableCache:
    """The page to show: re-read only when the run changed (new trials, an override added or
    undone), or the filters or the page did. ``marker`` is the run's marker when the caller
    has it (the live panel's shared one); else it is read now."""
    trial_filters = trial_filters or TrialFilters()
    cache = st.session_state.get(session.RUN_CACHE)
    if cache is None or cache.run_id != run_id:
        cache = TableCache(run_id)
        st.session_state[session.RUN_CACHE] = cache
    signature = loaders.run_marker(run_id) if marker is None else marker
    key = (repr(trial_filters), page)
    if signature == cache.signature and key == cache.key:
        return cache
    shared = shared_page(run_id, loaders.store().url, signature, key[0], page, PAGE_ROWS,
                         trial_filters)
    cache.frame, cache.latest, cache.index_of = shared.frame, shared.latest, shared.index_of
    cache.total, cache.newest = signature[0], signature[1] or None
    cache.matching, cache.page = shared.matching, shared.page
    cache.loop_total = loaders.loop_trial_count(run_id)
    cache.signature, cache.key = signature, key
    return cache


@st.cache_resource(ttl=600, max_entries=64, show_spinner=False)
def shared_page(run_id: str, database: str, marker: tuple[int, ...], filters_key: str,
                page: int, page_rows: int, _filters: TrialFilters) -> SharedPage:
    """The page for one (run, marker, filters, page): read and built once for every session
    (``cache_resource``: the frames are shared, not copied; nobody changes them).
    ``filters_key`` is ``repr(_filters)`` (what the cache is keyed by); ``database`` keeps
    runs of two databases apart."""
    index_of = loaders.candidate_indexes(run_id)
    kwargs = _filters.query()
    rows, matching = loaders.trial_page(run_id, (page - 1) * page_rows, page_rows, **kwargs)
    if not rows and matching and page > 1:  # fewer pages than before: show the last one
        page = max(1, math.ceil(matching / page_rows))
        rows, matching = loaders.trial_page(run_id, (page - 1) * page_rows, page_rows, **kwargs)
    recent = loaders.recent_trials(run_id, LATEST_ROWS)[::-1]
    numbers = loaders.trial_numbers(run_id, [t.id for t in (*rows, *recent) if t.id])
    latest = trial_frame(recent, index_of, numbers)
    return SharedPage(trial_frame(rows, index_of, numbers), latest, matching, page, index_of)


def filters(run_id: str, max_iterations: int) -> TrialFilters:
    """The filter widgets (outside the live fragment, so they keep their values)."""
    key = f"{session.RUN_FILTER}.{run_id}"
    top = max(1, max_iterations)
    session.init(f"{key}.iterations", (0, top))
    session.init(f"{key}.scores", (0.0, 1.0))
    session.init(f"{key}.unscored", True)
    session.init(f"{key}.errors", "any")
    session.init(f"{key}.overridden", "any")
    indexes = sorted(loaders.candidate_indexes(run_id).values())
    with st.expander("Filters", icon=":material/filter_list:"):
        cols = st.columns(3)
        cols[0].slider("Iterations", 0, top, key=f"{key}.iterations")
        cols[1].multiselect("Candidates", indexes, key=f"{key}.candidates",
                            format_func=lambda i: f"#{i}", placeholder="all")
        cols[2].multiselect("Phase", [p.value for p in TrialPhase if p is not TrialPhase.PROBE],
                            key=f"{key}.phases", placeholder="all")
        cols = st.columns(3)
        cols[0].slider("Score range", 0.0, 1.0, step=0.05, key=f"{key}.scores")
        cols[0].checkbox("Include “could not evaluate”", key=f"{key}.unscored")
        cols[1].segmented_control("Errors", ERROR_CHOICES, key=f"{key}.errors")
        cols[2].segmented_control("Overridden", OVERRIDE_CHOICES, key=f"{key}.overridden")
    ss = st.session_state
    iterations = ss.get(f"{key}.iterations") or (0, top)
    return TrialFilters(
        iterations=None if tuple(iterations) == (0, top) else tuple(iterations),
        candidates=list(ss.get(f"{key}.candidates") or []),
        phases=list(ss.get(f"{key}.phases") or []),
        score_range=tuple(ss.get(f"{key}.scores") or (0.0, 1.0)),
        include_unscored=bool(ss.get(f"{key}.unscored", True)),
        errors=ss.get(f"{key}.errors") or "any",
        overridden=ss.get(f"{key}.overridden") or "any")


def table_key(run_id: str) -> str:
    """The trials table's widget key (its row selection) for one run."""
    return f"{session.RUN_TABLE}.{run_id}"


def selected_key(run_id: str) -> str:
    """The session key of the trial id selected in one run's table."""
    return f"{session.RUN_SELECTED}.{run_id}"


def forget_other_runs(run_id: str) -> None:
    """Drop the selection state of every run but ``run_id`` (called when the page is drawn,
    so switching runs clears the previous run's selection and detail; coming back to it starts
    with nothing selected)."""
    ss = st.session_state
    prefixes = (session.RUN_TABLE, session.RUN_SELECTED, SHOWN_IDS)
    kept = {f"{prefix}.{run_id}" for prefix in prefixes}
    for key in list(ss.keys()):
        if isinstance(key, str) and key.startswith(tuple(f"{p}." for p in prefixes)) \
                and key not in kept:
            del ss[key]


def live_panel(run_id: str, status: RunStatus, trial_filters: TrialFilters) -> None:
    every = LIVE_SECONDS if status.is_active else IDLE_SECONDS
    forget_other_runs(run_id)

    @st.fragment(run_every=every)
    def panel() -> None:
        # a rerun of the page (a person's action) reads afresh; the fragment's own ticks share
        fresh = st.session_state.pop(FRESH_READ, False)
        live = loaders.read_live_run(run_id) if fresh else \
            loaders.live_run(run_id, loaders.store().url)
        run = live.run
        if run is not None and run.status is not status:
            run = loaders.run(run_id)  # the shared read may be a moment older than the page's
        if run is None:
            return
        if run.status is not status:
            st.rerun(scope="app")  # the controls above depend on the status
        cache = sync(run_id, trial_filters, _page(run_id, trial_filters), live.marker)
        progress(run, cache, live.progress, live.phase)
        with st.container():  # one slot whether or not a proposal waits (the table stays put)
            awaiting(run)
        with st.container():
            latest(cache)
        st.caption("All trials")
        table(cache)

    st.session_state[FRESH_READ] = True  # only this full run of the page sets it
    panel()


def _page(run_id: str, trial_filters: TrialFilters) -> int:
    """The page the person chose (back to the first when the filters change)."""
    ss = st.session_state
    key = f"{RUN_PAGE}.{run_id}"
    marker = f"{key}.filters"
    if ss.get(marker) != repr(trial_filters):
        ss[marker] = repr(trial_filters)
        ss[key] = 1
    return max(1, int(ss.get(key) or 1))


def progress(run, cache: TableCache, event, phase=None) -> None:
    """The progress bar from the run's latest progress ``event``, and what the run does now
    from its latest ``phase`` event (the live panel's shared reads)."""
    review = None
    if run.config.review is ReviewMode.REVIEW and run.status.is_active:
        review = loaders.review_time_estimate(run, event.iteration if event else 0)
    summary = progress_summary(run, event, cache.loop_total,
                               review_seconds=review.seconds if review else None,
                               test_trials=cache.total - cache.loop_total)
    text = summary.text()
    if summary.best_candidate_id is not None and summary.best_candidate_id in cache.index_of:
        text += f" (candidate #{cache.index_of[summary.best_candidate_id]})"
    st.progress(summary.fraction, text=text)
    with st.container():  # one slot, so the tables below keep their place
        doing = current_phase(run, phase)
        if doing:
            st.caption(escape_markdown(doing[0].upper() + doing[1:]) + ".")
        if review is not None:
            st.caption(f"Review mode: the ETA counts {review.text()}.")
        skipped = skipped_note(loaders.skipped_iterations(run.id))
        if skipped:
            st.caption(escape_markdown(skipped))


def awaiting(run) -> None:
    if run.config.review is not ReviewMode.REVIEW or not run.status.is_active:
        return

    pending = loaders.pending_proposal(run.id)
    if pending is not None:
        st.warning(f"{loaders.proposal_title(pending)} is waiting for your decision; the run is on "
                   "hold until you accept, edit or reject it.", icon=":material/how_to_vote:")
        frame.link(frame.PROPOSALS, "Decide on the Proposals page", ":material/arrow_forward:")


def latest(cache: TableCache) -> None:
    """The few newest trials, newest first, to watch them arrive (the full table below keeps
    its rows in place, so scrolling and selection there are never disturbed)."""
    if cache.latest.empty:
        return
    st.caption("Latest trials")
    st.dataframe(cache.latest, hide_index=True, width="stretch",
                 placeholder="could not evaluate", key="run.latest",
                 column_order=shown_columns(LATEST_COLUMNS, cache.latest),
                 column_config=_COLUMNS)


def table(cache: TableCache) -> None:
    """One page of the trials, oldest first: a new trial is appended at the end, so the rows a
    person is looking at, the scroll position and the selected row stay where they are."""
    shown = cache.frame
    ids = shown["id"].tolist()
    selected = _selected_id(cache.run_id, ids)
    with st.container():
        if cache.total == 0:
            st.info("No trials yet: the first ones appear here as soon as they are scored.")
    st.dataframe(
        shown, key=table_key(cache.run_id), on_select="rerun", selection_mode="single-row",
        hide_index=True, height=400, width="stretch", placeholder="could not evaluate",
        column_order=shown_columns(TABLE_COLUMNS, shown),
        column_config=_COLUMNS)
    paged = cache.matching > PAGE_ROWS
    first = (cache.page - 1) * PAGE_ROWS + 1
    where = (f" ({cache.matching} match the filters)" if cache.matching != cache.total else "")
    if paged:
        where = (f" (rows {first}–{first + len(shown) - 1} of {cache.matching}"
                 + (" matching" if cache.matching != cache.total else "") + ")")
    st.caption(f"Showing {len(shown)} of {cache.total} trials" + where
               + (f" · newest trial {cache.total} (id {cache.newest})"
                  if cache.newest is not None else "")
               + " · select a row to see it in full")
    if paged:
        key = f"{RUN_PAGE}.{cache.run_id}"
        if st.session_state.get(key) != cache.page:
            st.session_state[key] = cache.page
        st.number_input(f"Page (of {cache.pages}, {PAGE_ROWS} trials each)", min_value=1,
                        max_value=None, step=1, key=key)
    if selected is not None:
        trial = loaders.trial(cache.run_id, selected)
        if trial is not None:
            with st.container(border=True):
                run = loaders.run(cache.run_id)
                show_trial(trial, candidate=cache.index_of.get(trial.candidate_id),
                           scored=scored_author(run.spec if run else None))


def _selected_id(run_id: str, ids: list[int]) -> int | None:
    """The run's selected trial id, kept across filter changes (the table's selection is by
    position, so after a filter change it is re-pointed at the same trial before the table is
    drawn; new rows are appended at the end and move nothing)."""
    ss = st.session_state
    shown_key, table, selected = f"{SHOWN_IDS}.{run_id}", table_key(run_id), selected_key(run_id)
    previous = ss.get(shown_key) or []
    selection = ss.get(table)
    rows = list(selection["selection"]["rows"]) if selection else []
    current = ss.get(selected)
    if rows and rows[0] < len(previous):
        current = previous[rows[0]]
    elif not rows and current is not None and current in previous and selection is not None:
        current = None  # the person cleared the selection
    ss[selected] = current
    wanted = [ids.index(current)] if current is not None and current in ids else []
    if wanted != rows:
        ss[table] = {"selection": {"rows": wanted, "columns": [], "cells": []}}
    ss[shown_key] = ids
    return current


_KINDS: dict[str, Callable[..., Any]] = {
    "number": st.column_config.NumberColumn, "text": st.column_config.TextColumn,
    "checkbox": st.column_config.CheckboxColumn}


def _column(column: TrialColumn) -> Any:
    """A trial column as its own description says to show it."""
    options = {"format": column.format} if column.format else {}
    return _KINDS[column.kind](column.title, width=column.width, help=column.help, **options)


_COLUMNS = {c.name: _column(c) for c in TRIAL_TABLE if c.styled}
