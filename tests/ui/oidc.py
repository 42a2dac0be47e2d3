"""A real OpenID Connect provider on 127.0.0.1 for the sign-in tests (``oidc-provider-mock``
from PyPI: a Flask app on Authlib, whose authorize form takes any subject and puts it in the
``email`` claim), the ``[auth]`` section Streamlit's ``st.login`` reads, and signing in from
Chromium as a person would: the studio's button, the provider's form, back to the studio."""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.ui.browser import free_port


@contextlib.contextmanager
def oidc_provider() -> Iterator[str]:
    """The provider served on a thread at ``http://127.0.0.1:PORT`` (yielded), stopped after."""
    import oidc_provider_mock
    import werkzeug.serving

    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(),
                                          threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


def auth_secrets(folder: Path, issuer: str) -> tuple[Path, int]:
    """A ``secrets.toml`` whose ``[auth]`` signs in with ``issuer``, and the port the studio
    must serve on (its ``redirect_uri`` names it)."""
    port = free_port()
    path = folder / "secrets.toml"
    path.write_text(f"""[auth]
redirect_uri = "http://localhost:{port}/oauth2callback"
cookie_secret = "{secrets.token_hex(24)}"
client_id = "evolution-studio"
client_secret = "{secrets.token_hex(12)}"
server_metadata_url = "{issuer}/.well-known/openid-configuration"
""", encoding="utf-8")
    return path, port


def sign_in(page, url: str, name: str, *, path: str = "") -> None:
    """Open the studio, press its Sign in button, give the provider ``name``, come back signed
    in (the sidebar says who)."""
    page.goto(f"{url}/{path}")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("input[name=sub]")
    page.fill("input[name=sub]", name)
    page.get_by_role("button", name="Authorize").click()
    page.get_by_text("Signed in as").wait_for(timeout=60_000)
