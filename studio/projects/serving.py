"""How the studio's web server is started: on this machine only, with the studio's settings,
wherever it is launched from (``studio ui``); and the check ``studio/app.py`` makes before it
serves a page.

The studio runs models, shows their output and stores projects: anyone who can reach it can use
the API keys it holds. Serving a team means putting authentication in front (docs/security.md).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

from studio.model.errors import ConfigError

ALLOW_REMOTE_ENV = "STUDIO_ALLOW_REMOTE"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
MAX_UPLOAD_MB = 20
APP = Path(__file__).resolve().parents[1] / "app.py"


def remote_allowed() -> bool:
    return os.environ.get(ALLOW_REMOTE_ENV, "").strip().lower() in ("1", "true", "yes")


def is_loopback(address: str) -> bool:
    """Whether a bind address reaches this machine only ("" means every interface)."""
    address = (address or "").strip().strip("[]")
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def check_bind_address(address: str | None, *, allow_remote: bool = False) -> None:
    """Refuse to serve on an address other machines can reach, unless explicitly allowed.

    Raises:
        ConfigError: naming the address and the opt-in.
    """
    if is_loopback(address or "") or allow_remote:
        return
    shown = address or "every network interface"
    raise ConfigError(
        f"the studio would listen on {shown}, reachable from other machines, and it has no "
        "login. Start it with `studio ui` (localhost only), or, behind an authenticating "
        f"proxy, with `studio ui --address ADDRESS --allow-remote` ({ALLOW_REMOTE_ENV}=1)",
        where="server.address", value=address)


def streamlit_command(*, address: str = "localhost", port: int = 8501,
                      allowed_hosts: list[str] | None = None) -> list[str]:
    """``streamlit run studio/app.py`` with the studio's server settings as flags, so they hold
    whatever folder it is started from: bound to ``address``, usage statistics off, XSRF and
    CORS protection on, WebSockets refused unless their Host is one of ``allowed_hosts``
    (DNS rebinding), uploads capped at :data:`MAX_UPLOAD_MB` MB."""
    hosts = [*LOOPBACK_HOSTS, *(h for h in allowed_hosts or [] if h not in LOOPBACK_HOSTS)]
    if not is_loopback(address) and address not in hosts and address not in ("", "0.0.0.0", "::"):
        hosts.append(address)
    command = [sys.executable, "-m", "streamlit", "run", str(APP),
               "--server.address", address, "--server.port", str(port),
               "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--browser.serverAddress", "localhost" if is_loopback(address) else address,
               "--server.enableXsrfProtection", "true", "--server.enableCORS", "true",
               "--server.maxUploadSize", str(MAX_UPLOAD_MB), "--server.runOnSave", "false",
               "--client.showErrorDetails", "type", "--runner.magicEnabled", "false",
               "--runner.postScriptGC", "false"]
    for host in hosts:
        command += ["--server.allowedHosts", host]
    return command
