"""Drop a fragment's timed rerun sent from a page the server has already left.

Why this exists: a page that switches pages from the server (``st.switch_page`` after a button,
as "Start a run" does) races the fragments that re-run on a timer (the sidebar's inbox badge
ticks on every page, the Run page's trial table every second). A tick the browser sent while it
still showed the old page reaches the server after the switch. Streamlit 1.67 then runs that
fragment *with the old page's hash*: it tells the browser the session is back on the old page,
the next tick of the new page's fragment makes the server switch back with a full rerun, and
the browser applies the fragment's elements to a page it has just cleared: "Bad delta path
index", a blank page until reload. On a busy machine (CI) a run's first page load hit it about
one time in three.

A timed tick is safe to drop: the fragment ticks again on the page it belongs to, and a full
rerun (the page switch) redraws every fragment anyway. So a timed rerun of a fragment is
dropped when it names a page other than the session's page, which is, first found first:

1. the page of a full rerun waiting in the script runner's queue (a switch requested, whose
   page a merged tick would otherwise overwrite);
2. the page of a full rerun the script runner has taken from its queue but not yet started
   (between the two, Streamlit still reports the old page);
3. the page Streamlit reports as current.

Everything else goes to Streamlit unchanged. Kept as a small patch of ``AppSession``,
``ScriptRequests`` and ``ScriptRunContext.reset`` because Streamlit offers no hook here. Any
surprise in the internals it reads means "do not drop", which is Streamlit's own behaviour.
"""

from __future__ import annotations

import logging
from typing import Any

_LOG = logging.getLogger(__name__)
_MARK = "_studio_drops_stale_fragment_reruns"
_TAKEN_PAGE = "_studio_taken_full_rerun_page"


def is_stale_fragment_tick(client_state: Any, session_page: str | None) -> bool:
    """Whether ``client_state`` is a fragment's timed rerun from a page other than
    ``session_page`` (None when unknown: nothing is stale then)."""
    if client_state is None or not session_page:
        return False
    page = client_state.page_script_hash
    return bool(client_state.fragment_id and client_state.is_auto_rerun and page
                and page != session_page)


def session_page(app_session: Any) -> str | None:
    """The page ``app_session`` is on or about to be on (see the module's docstring), or None
    when its state does not say."""
    requests = getattr(getattr(app_session, "_scriptrunner", None), "_requests", None)
    pages = getattr(app_session, "_pages_manager", None)
    return (_waiting_full_rerun_page(requests) or getattr(requests, _TAKEN_PAGE, None)
            or getattr(pages, "current_page_script_hash", None) or None)


def _waiting_full_rerun_page(requests: Any) -> str | None:
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    if requests is None or getattr(requests, "_state", None) != ScriptRequestType.RERUN:
        return None
    return _full_rerun_page(getattr(requests, "_rerun_data", None))


def _full_rerun_page(rerun_data: Any) -> str | None:
    """The page ``rerun_data`` reruns the whole app on; None for a fragment's rerun."""
    if rerun_data is None or rerun_data.fragment_id or rerun_data.fragment_id_queue \
            or rerun_data.is_fragment_scoped_rerun:
        return None
    return rerun_data.page_script_hash or None


def install() -> bool:
    """Patch Streamlit once per process; True when the patch is in place (False, with a warning
    in the log, when this Streamlit lacks what it patches)."""
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    if getattr(AppSession.request_rerun, _MARK, False):
        return True
    needed = (getattr(ScriptRequests, "on_scriptrunner_yield", None),
              getattr(ScriptRequests, "on_scriptrunner_ready", None),
              getattr(ScriptRunContext, "reset", None))
    if not all(needed):
        _LOG.warning("Streamlit %s: fragment ticks from a page already left are not dropped",
                     _streamlit_version())
        return False
    for name in ("on_scriptrunner_yield", "on_scriptrunner_ready"):
        setattr(ScriptRequests, name, _remembering_taken_page(getattr(ScriptRequests, name)))
    ScriptRunContext.reset = _forgetting_taken_page(ScriptRunContext.reset)  # type: ignore
    AppSession.request_rerun = _dropping_stale_ticks(  # type: ignore[method-assign]
        AppSession.request_rerun)
    return True


def _dropping_stale_ticks(original: Any) -> Any:
    def request_rerun(self: Any, client_state: Any) -> None:
        try:
            stale = is_stale_fragment_tick(client_state, session_page(self))
        except Exception:  # noqa: BLE001 - internals moved: keep Streamlit's own behaviour
            _LOG.debug("stale-tick check failed; the rerun goes ahead", exc_info=True)
            stale = False
        if stale:
            _LOG.info("dropped a timed rerun of fragment %s sent from a page already left",
                      client_state.fragment_id)
            return
        original(self, client_state)

    return _marked(request_rerun, original)


def _remembering_taken_page(original: Any) -> Any:
    """``ScriptRequests.on_scriptrunner_*``: as Streamlit's, also noting the page of a full
    rerun the runner takes (the session's page until that run starts and resets)."""
    def taken(self: Any) -> Any:
        request = original(self)
        try:
            page = _full_rerun_page(request._rerun_data) if request is not None else None
            if page:
                setattr(self, _TAKEN_PAGE, page)
        except Exception:  # noqa: BLE001 - never in the way of Streamlit's own request
            _LOG.debug("could not note the page of a rerun", exc_info=True)
        return request

    return _marked(taken, original)


def _forgetting_taken_page(original: Any) -> Any:
    """``ScriptRunContext.reset``: as Streamlit's; a run has started, so the page Streamlit
    reports (and ``st.navigation`` resolves) is the session's page again."""
    def reset(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        requests = getattr(self, "script_requests", None)
        if requests is not None and getattr(requests, _TAKEN_PAGE, None) is not None:
            setattr(requests, _TAKEN_PAGE, None)

    return _marked(reset, original)


def _marked(wrapper: Any, original: Any) -> Any:
    setattr(wrapper, _MARK, True)
    wrapper.__wrapped__ = original
    wrapper.__doc__ = original.__doc__
    wrapper.__name__ = original.__name__
    return wrapper


def _streamlit_version() -> str:
    import streamlit

    return streamlit.__version__
