"""The frame around every page: the sidebar (who you are, which run), page links, logging."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from components import loaders, session, signin
from studio.model.redaction import mask
from studio.model.team import NEEDED_ROLE, Permission
from studio.projects.serving import APP, ui_root
from studio.runtime.logs import quiet_library_logs
from studio.views.tables import run_label


def _page(name: str) -> str:
    """A page's path relative to ``studio/app.py``, as st.switch_page and st.page_link take it:
    ``../pages/x.py`` in a checkout, ``_ui/pages/x.py`` installed from a wheel."""
    return Path(os.path.relpath(ui_root() / "pages" / f"{name}.py", APP.parent)).as_posix()


HOME = _page("home")
PROJECTS = _page("projects")
RUN = _page("run")
REVIEW = _page("review")
PROPOSALS = _page("proposals")
COMPARE = _page("compare")
AGREEMENT = _page("agreement")
TEAM = _page("team")

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                 "MISTRAL_API_KEY", "GROQ_API_KEY")


@st.cache_resource
def setup_logging() -> bool:

    quiet_library_logs()
    return True


def sidebar(sections: dict[str, list]) -> None:
    with st.sidebar:
        st.markdown("### :material/biotech: Evolution Studio")
        inbox()
        if session.wants_first_run():
            session.open_first_run(loaders.run_to_open())
        params = session.url_params()
        for section, pages in sections.items():
            st.caption(section)
            for page in pages:
                st.page_link(page, query_params=params, width="stretch")
        st.divider()
        if session.actor().local:
            st.text_input("Your name", key=session.AUTHOR,
                          help="Recorded with every score correction and decision you make.")
        else:
            signin.sidebar_identity()
        run_picker()
        if session.actor().can(Permission.CONFIGURE):  # the database and key names: owners
            environment()


INBOX_POLL_SECONDS = 5
"""How often the sidebar's badge looks again for a proposal waiting (a fragment: only the badge
is redrawn, so a proposal that comes to a gate shows while the person reads another page)."""


def inbox() -> None:
    """The "waiting for you" badge: how many runs have a proposal waiting for a decision, and a
    button to the one that has waited longest (unless it is the page already shown)."""

    if not session.actor().can(Permission.GATE):
        return  # a proposal waits for an owner, not for this person

    @st.fragment(run_every=INBOX_POLL_SECONDS)
    def badge() -> None:
        waiting = loaders.waiting()
        if not waiting:
            return
        count = len(waiting)
        st.badge(f"{count} run{'s' if count > 1 else ''} waiting for you",
                 icon=":material/inbox:", color="orange")
        oldest = min(waiting, key=lambda run_id: waiting[run_id].created_at)
        here = session.current_run_id() == oldest and session.current_page() == "proposals"
        if not here and st.button("Decide the oldest", key="app.inbox",
                                  icon=":material/gavel:", width="stretch"):
            session.set_current_run(oldest)
            go(PROPOSALS)

    badge()


def link(page: str, label: str, icon: str | None = None, *, where=None) -> None:
    """A link to another page that keeps the current run and project."""
    (where or st).page_link(page, label=label, icon=icon, query_params=session.url_params())


def go(page: str) -> None:
    """Switch to ``page`` keeping the current run and project in the URL."""
    st.switch_page(page, query_params=session.url_params())


def run_picker() -> None:
    runs = loaders.runs()
    current = session.current_run_id()
    ids = [r.id for r in runs]
    labels = {r.id: run_label(r) for r in runs}
    if current and current not in ids:
        run = loaders.run(current)
        if run is None:
            session.set_current_run(None)
            current = None
        else:
            ids.insert(0, current)
            labels[current] = run_label(run)
    if not ids:
        st.caption("No runs yet: start one on the Run page.")
        return
    if st.session_state.get(session.RUN_PICKER) != current:
        st.session_state[session.RUN_PICKER] = current
    st.selectbox("Current run", ids, key=session.RUN_PICKER, index=None,
                 format_func=lambda run_id: labels.get(run_id, run_id),
                 placeholder="Choose a run", on_change=_picked)
    if current in loaders.waiting() and session.actor().can(Permission.GATE):
        # said beside the picker, not in its label: the browser matches the selection by its
        # label, so a label that changed would drop the current run
        st.caption(":material/hourglass_top: A proposal of this run waits for your decision.")


def _picked() -> None:
    session.set_current_run(st.session_state.get(session.RUN_PICKER))


def environment() -> None:

    with st.expander("Database and API keys"):
        st.caption(f"Database: `{loaders.database_label()}`")
        st.caption("Keys are read from the environment only; never stored or shown in full.")
        for name in KEY_VARIABLES:
            st.caption(f"`{name}`: {mask(os.environ.get(name))}")




def need_run(*, blind_ok: bool = False) -> str | None:
    """The current run id, or an empty state that says what to do (then None). A reviewer of a
    blind project sees its scores only where they label (``blind_ok``: the Review page)."""
    run_id = session.current_run_id()
    if run_id and loaders.run(run_id) is not None:
        return run_id if blind_ok or not blinded(run_id) else None
    st.info("No run is selected. Start one on the Run page, or pick one in the sidebar.")
    link(RUN, "Go to Run", ":material/play_arrow:")
    return None


def blinded(run_id: str | None) -> bool:
    """Whether the acting person reviews ``run_id`` blind; if so, says so (and where to go)."""
    if run_id is None or not loaders.blinded(run_id, session.actor()):
        return False
    st.info("This run is reviewed blind: until you have labelled a trial, its judge's score "
            "and the other reviewers' labels are hidden from you, so its scores are shown only "
            "to owners. Label its trials on the Review page.", icon=":material/visibility_off:")
    link(REVIEW, "Go to Review", ":material/rate_review:")
    return True


def allowed(permission: Permission) -> bool:
    """Whether the acting person may do ``permission``; if not, says which role it needs (the
    control is then not drawn, so nothing can trigger the action)."""
    actor = session.actor()
    if actor.can(permission):
        return True
    role = actor.role.value if actor.role is not None else "no role"
    st.caption(f":material/lock: {permission.value.capitalize()} needs the "
               f"{NEEDED_ROLE[permission].value} role: you are a {role} here.")
    return False
