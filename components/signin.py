"""Sign-in with Streamlit's own authentication (``st.login``, OpenID Connect), when ``[auth]`` is
configured in ``.streamlit/secrets.toml``: then every page requires it, and the person acting is
the one signed in, with the role an owner gave them (``studio users``, the Team page). Without
``[auth]`` the studio is the local, single-user one and this module does nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from components import loaders, session
from studio.projects.serving import sign_in_providers
from studio.views.markdown import escape_markdown


def auth_section() -> dict[str, Any]:
    """The ``[auth]`` section Streamlit reads (its ``secrets.files``), as plain dicts; empty
    when there is none."""
    try:
        if not st.secrets.load_if_toml_exists():
            return {}
        found = st.secrets.get("auth")
    except Exception:  # an unreadable secrets file: Streamlit reports it itself
        return {}
    return _plain(found) if isinstance(found, Mapping) else {}


def _plain(value: Any) -> Any:
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, Mapping) else value


def require(section: dict[str, Any]) -> None:
    """Stop the page unless someone signed in who has a role here; remember who.

    Nothing of the studio (no project, run or name) is drawn before this passes."""
    if not st.user.get("is_logged_in"):  # the proxy lacks the key before any sign-in
        _sign_in_page(section)
        st.stop()
    name = signed_in_name()
    actor = loaders.signed_in_actor(name)
    if actor is None:
        _no_role_page(name)
        st.stop()
    st.session_state[session.ACTOR] = actor


def signed_in_name() -> str:
    """The identity a person signed in with: their e-mail, else the provider's subject id."""
    return str(st.user.get("email") or st.user.get("sub") or "").strip()


def _sign_in_page(section: dict[str, Any]) -> None:
    st.title("Evolution Studio")
    st.markdown("This studio is shared by a team: sign in to see its projects and runs.")
    providers = sign_in_providers(section) or [None]
    for provider in providers:
        label = "Sign in" if provider is None else f"Sign in with {provider}"
        st.button(label, type="primary", icon=":material/login:", on_click=st.login,
                  args=(provider,) if provider is not None else (),
                  key=f"app.signin.{provider or 'default'}")


def _no_role_page(name: str) -> None:
    st.title("Evolution Studio")
    shown = escape_markdown(name or "(no e-mail or subject)")
    if loaders.has_users():
        st.warning(f"You are signed in as **{shown}**, but this studio has not given you a "
                   "role. Ask an owner to add you on the Team page, or with "
                   f"`studio users add {name} --role reviewer`.", icon=":material/lock:")
    else:
        st.warning(f"You are signed in as **{shown}**, and this studio has no users yet. Its "
                   "owner adds themself first, from a shell where the studio's database is "
                   f"reachable: `studio users add {name} --role owner`.", icon=":material/lock:")
    st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="app.signout")


def sidebar_identity() -> None:
    """Who is signed in, their role, and the way out (in the sidebar)."""
    actor = session.actor()
    role = actor.role.value if actor.role is not None else "every role"
    st.caption(f"Signed in as **{escape_markdown(actor.name)}** · {role}")
    st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="app.signout",
              width="stretch")
