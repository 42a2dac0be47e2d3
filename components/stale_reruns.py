"""Drop a fragment's timed rerun sent from a page the server has already left.

Why this exists: a page that switches pages from the server (``st.switch_page`` after a button,
as "Start a run" does) races the fragments that re-run on a timer (the sidebar's inbox badge
ticks on every page, the Run page's trial table every second). A tick the browser sent while it
still showed the old page reaches the server after the new page's run began. Streamlit 1.67 then
runs that fragment *with the old page's hash*: it tells the browser the session is back on the
old page, the next tick of the new page's fragment makes the server switch back with a full
rerun, and the browser applies the fragment's elements to a page it has just cleared: "Bad delta
path index", a blank page until reload. On a busy machine (CI) a run's first page load hit it
about one time in three.

A timed tick is safe to drop: the fragment ticks again on the page it belongs to, and a full
rerun (the page switch) redraws every fragment anyway. So a timed rerun of a fragment is
dropped when it names a page other than the one the session is on, or about to be on (a full
rerun already waiting, whose page a merged tick would otherwise overwrite). Everything else
goes to Streamlit unchanged.

Kept as a small patch of ``AppSession.request_rerun`` because Streamlit offers no hook here;
``install`` says so in the server log and changes nothing if the internals it reads are gone.
"""

from __future__ import annotations

import logging
from typing import Any

_LOG = logging.getLogger(__name__)
_MARK = "_studio_drops_stale_fragment_reruns"


def is_stale_fragment_tick(client_state: Any, session_page: str | None) -> bool:
    """Whether ``client_state`` is a fragment's timed rerun from a page other than
    ``session_page`` (the page the session is on or about to be on; None when unknown)."""
    if client_state is None or not session_page:
        return False
    page = client_state.page_script_hash
    return bool(client_state.fragment_id and client_state.is_auto_rerun and page
                and page != session_page)


def session_page(app_session: Any) -> str | None:
    """The page ``app_session`` is on, or the page of the full rerun already waiting to start
    (a page switch requested by the running script)."""
    pending = _pending_full_rerun_page(app_session)
    if pending:
        return pending
    pages = getattr(app_session, "_pages_manager", None)
    return getattr(pages, "current_page_script_hash", None) or None


def _pending_full_rerun_page(app_session: Any) -> str | None:
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    runner = getattr(app_session, "_scriptrunner", None)
    requests = getattr(runner, "_requests", None)
    if requests is None or getattr(requests, "_state", None) != ScriptRequestType.RERUN:
        return None
    waiting = getattr(requests, "_rerun_data", None)
    if waiting is None or waiting.fragment_id or waiting.fragment_id_queue \
            or waiting.is_fragment_scoped_rerun:
        return None
    return waiting.page_script_hash or None


def install() -> bool:
    """Patch Streamlit's ``AppSession.request_rerun`` once per process; True when the patch is
    in place (False, with a warning in the log, when this Streamlit lacks what it reads)."""
    from streamlit.runtime.app_session import AppSession

    original = AppSession.request_rerun
    if getattr(original, _MARK, False):
        return True
    if not hasattr(AppSession, "has_fragment"):  # the internals this reads have moved
        _LOG.warning("Streamlit %s: fragment ticks from a page already left are not dropped",
                     _streamlit_version())
        return False

    def request_rerun(self: Any, client_state: Any) -> None:
        if is_stale_fragment_tick(client_state, session_page(self)):
            _LOG.info("dropped a timed rerun of fragment %s sent from a page already left",
                      client_state.fragment_id)
            return
        original(self, client_state)

    setattr(request_rerun, _MARK, True)
    request_rerun.__wrapped__ = original  # type: ignore[attr-defined]
    request_rerun.__doc__ = original.__doc__
    AppSession.request_rerun = request_rerun  # type: ignore[method-assign]
    return True


def _streamlit_version() -> str:
    import streamlit

    return streamlit.__version__
