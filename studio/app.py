"""The studio's entrypoint: ``streamlit run studio/app.py``.

A router (``st.navigation``) over the thin pages in ``../pages`` (``_ui/pages`` once installed from
a wheel), with the shared sidebar. This is the only module of the ``studio`` package that imports
Streamlit.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent
# `streamlit run studio/app.py` puts studio/ first on sys.path, where studio/llm, studio/errors.py
# and friends would shadow top-level modules of the same name (the `llm` package, for one).
# Put the repository root there instead, before anything else is imported.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from studio.projects.serving import (  # noqa: E402
    check_bind_address,
    remote_allowed,
    sign_in_problem,
    ui_root,
)

# The folder of pages/ and components/: the root above in a checkout, studio/_ui once installed
# (setup.py), where `from components import ...` finds them the same way.
_UI = ui_root()
if str(_UI) not in sys.path:
    sys.path.insert(0, str(_UI))

import streamlit as st  # noqa: E402

from components import frame, session, signin, stale_reruns  # noqa: E402
from studio.model.errors import ConfigError  # noqa: E402
from studio.runtime.tracing import enable_tracing  # noqa: E402

st.set_page_config(page_title="Evolution Studio", page_icon="🧬",
                   layout="wide")
AUTH = signin.auth_section()  # [auth] in .streamlit/secrets.toml: every page needs sign-in
if AUTH and sign_in_problem(AUTH):  # half a sign-in serves nothing, not an open studio
    st.error(f"Sign-in is configured in .streamlit/secrets.toml but cannot work: "
             f"{sign_in_problem(AUTH)} (see docs/guides/team.md).")
    st.stop()
try:  # a server reachable from other machines, without sign-in, serves nothing
    check_bind_address(st.get_option("server.address"), allow_remote=remote_allowed(),
                       sign_in=bool(AUTH))
except ConfigError as refused:
    st.error(str(refused))
    st.stop()
if AUTH:
    signin.require(AUTH)  # stops here, showing nothing of the studio, until someone with a role
    # has signed in
stale_reruns.install()  # once per process: a page switch must not race the fragments' timers
frame.setup_logging()
enable_tracing()  # ADK's OpenTelemetry setup when OTEL_EXPORTER_OTLP_ENDPOINT is set; once
session.init_app_state()

_PAGES = _UI / "pages"
SECTIONS = {
    "Studio": [
        st.Page(_PAGES / "home.py", title="Home", icon=":material/home:", default=True),
        st.Page(_PAGES / "projects.py", title="Projects", icon=":material/folder_open:"),
    ],
    "Evolve": [
        st.Page(_PAGES / "run.py", title="Run", icon=":material/play_circle:"),
        st.Page(_PAGES / "review.py", title="Review", icon=":material/rate_review:"),
        st.Page(_PAGES / "proposals.py", title="Proposals", icon=":material/how_to_vote:"),
    ],
    "Analyse": [
        st.Page(_PAGES / "compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page(_PAGES / "agreement.py", title="Agreement", icon=":material/balance:"),
    ],
    "Team": [
        st.Page(_PAGES / "team.py", title="Team", icon=":material/group:"),
    ],
}
# The sidebar draws its own links (they carry ?run=...&project=... so a refresh or a second tab
# opens the same run), hence the hidden built-in menu.
page = st.navigation(SECTIONS, position="hidden")
frame.sidebar(SECTIONS)
session.enter_page(page.url_path or "home")  # the default page's path is ""
session.show_flash()
page.run()
