"""How the studio's web server is started: on this machine only, with the studio's settings,
wherever it is launched from (``studio ui``); where its pages are, in a checkout or installed;
and the check ``studio/app.py`` makes before it serves a page.

The studio runs models, shows their output and stores projects: anyone who can reach it can use
the API keys it holds. Serving a team means sign-in (Streamlit's ``st.login``, OpenID Connect,
``[auth]`` in ``.streamlit/secrets.toml``) or authentication in front (docs/security.md).
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from studio.model.errors import ConfigError

ALLOW_REMOTE_ENV = "STUDIO_ALLOW_REMOTE"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
MAX_UPLOAD_MB = 20
PACKAGE = Path(__file__).resolve().parents[1]
APP = PACKAGE / "app.py"
INSTALLED_UI = PACKAGE / "_ui"
"""Where a wheel puts the web UI (setup.py): pages/, components/, examples/, .streamlit/."""
CHECKOUT_UI = PACKAGE.parent
"""Where a checkout (or an editable install of one) has them: the repository's root."""


def ui_root() -> Path:
    """The folder holding the web UI's ``pages/``, ``components/``, ``examples/`` and
    ``.streamlit/``: ``studio/_ui`` when installed from a wheel, else the repository's root.

    The installed place is looked at first: site-packages, the parent of an installed package,
    may hold anything, including another distribution's ``pages`` folder."""
    return INSTALLED_UI if (INSTALLED_UI / "pages").is_dir() else CHECKOUT_UI


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


def check_bind_address(address: str | None, *, allow_remote: bool = False,
                       sign_in: bool = False) -> None:
    """Refuse to serve on an address other machines can reach without sign-in, unless told
    ``allow_remote`` (``--insecure-no-login``: say what that exposes, :func:`exposure`).

    Raises:
        ConfigError: naming the address, sign-in and the opt-in.
    """
    if is_loopback(address or "") or sign_in or allow_remote:
        return
    shown = address or "every network interface"
    raise ConfigError(
        f"the studio would listen on {shown}, reachable from other machines, and sign-in is "
        f"not configured. Configure sign-in ([auth] in {SECRETS_FILE}, see "
        "docs/guides/team.md), or start it with `studio ui` (localhost only); to serve it "
        "without sign-in behind an authenticating proxy, add --insecure-no-login "
        f"(--allow-remote, its old name; {ALLOW_REMOTE_ENV}=1)",
        where="server.address", value=address)


def exposure(address: str, port: int) -> str:
    """What serving beyond localhost without sign-in exposes, said when it starts."""
    return (f"studio: serving http://{address or '*'}:{port} WITHOUT SIGN-IN: anyone who "
            "reaches this port acts with every role: reads every project, run and trial, "
            "spends the API keys in this server's environment, starts and stops runs, decides "
            "proposals and rewrites corrections under any name they type")


SECRETS_FILE = ".streamlit/secrets.toml"
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")
AUTH_KEYS = ("redirect_uri", "cookie_secret")


def secrets_files(folder: Path | None = None) -> list[Path]:
    """Where Streamlit reads ``[auth]`` by default: the user's and the start folder's."""
    return [Path.home() / SECRETS_FILE, (folder or Path.cwd()) / SECRETS_FILE]


def auth_section(files: Iterable[Path]) -> dict[str, object]:
    """The ``[auth]`` section Streamlit would read from ``files`` (later files win, as in
    Streamlit); empty when there is none."""
    section: dict[str, object] = {}
    for path in files:
        try:
            found = tomllib.loads(path.read_text(encoding="utf-8")).get("auth")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(found, dict):
            section.update(found)
    return section


def sign_in_problem(section: Mapping[str, object]) -> str | None:
    """What an ``[auth]`` section lacks for ``st.login`` to work (None: nothing)."""
    if not section:
        return f"there is no [auth] section in {SECRETS_FILE}"
    missing = [key for key in AUTH_KEYS if not section.get(key)]
    if not sign_in_providers(section):
        missing.append("a provider (" + ", ".join(PROVIDER_KEYS) + ")")
    return f"[auth] lacks {', '.join(missing)}" if missing else None


def sign_in_providers(section: Mapping[str, object]) -> list[str | None]:
    """The providers an ``[auth]`` section names: None for the one given at its top level,
    else each ``[auth.NAME]`` table's name."""
    complete = [name for name, table in section.items() if isinstance(table, dict)
                and all(table.get(key) for key in PROVIDER_KEYS)]
    return ([None] if all(section.get(key) for key in PROVIDER_KEYS) else []) + complete


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
    user_files = [Path.home() / ".streamlit" / "config.toml", Path(".streamlit") / "config.toml"]
    return command + config_flags(ui_root() / ".streamlit" / "config.toml", set_by=command,
                                  user_files=user_files)


def config_flags(path: Path, *, set_by: Iterable[str] = (),
                 user_files: Iterable[Path] = ()) -> list[str]:
    """The settings of the studio's ``.streamlit/config.toml`` as ``streamlit run`` flags, but
    those already in ``set_by`` and those a person set in ``user_files`` (Streamlit's own
    ``~/.streamlit`` and ``./.streamlit`` files, which it reads as usual).

    Streamlit reads the studio's file only when started in the folder holding it (the
    repository's root), and an installed studio is started anywhere: as flags, its theme, toolbar
    and log level hold wherever ``studio ui`` runs."""
    taken = {arg for arg in set_by if arg.startswith("--")}
    for user_file in user_files:
        taken |= {f"--{name}" for name in _settings(user_file)}
    flags: list[str] = []
    for name, value in _settings(path).items():
        if f"--{name}" not in taken:
            for one in value if isinstance(value, list) else [value]:
                flags += [f"--{name}", _flag_value(one)]
    return flags


def _settings(path: Path) -> dict[str, object]:
    """A Streamlit config file as ``{"section.option": value}``; nothing for a missing file or
    one that does not parse (Streamlit reports that one itself when it reads it)."""
    try:
        sections = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return {f"{section}.{key}": value for section, options in sections.items()
            if isinstance(options, dict) for key, value in options.items()}


def _flag_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def serve(command: list[str], env: dict[str, str]) -> int:
    """Run the server ``command`` in place of this process; return its exit code where this
    process cannot be replaced.

    ``studio ui`` as a parent of Streamlit would die on SIGTERM (a service manager, ``kill``)
    and leave the server running, still holding the port. Replaced by it, the signal reaches
    Streamlit, which shuts down. Where ``exec`` does not replace a process (Windows starts a new
    one and exits), the server runs as a child that is passed the SIGTERM and SIGINT this one
    receives (:func:`serve_as_child`).
    """
    sys.stdout.flush()  # exec discards what is still buffered
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(command[0], command, env)
    return serve_as_child(command, env)


def serve_as_child(command: list[str], env: dict[str, str]) -> int:
    """Run the server as a child, passing on SIGINT and SIGTERM; its exit code (``128 + N``
    when signal N ended it, as a shell reports it)."""
    started: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        for child in started:
            if signum == signal.SIGTERM:
                child.terminate()
            elif os.name == "posix":  # elsewhere the console sends Ctrl-C to the child too
                child.send_signal(signum)

    previous = {stop: signal.signal(stop, forward) for stop in (signal.SIGINT, signal.SIGTERM)}
    try:
        started.append(subprocess.Popen(command, env=env))
        code = started[0].wait()
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    return 128 - code if code < 0 else code
