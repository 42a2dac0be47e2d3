"""The processes tests start, forked from a warm interpreter (a "zygote") instead of a cold one.

Why: a test that starts ``studio run``, ``resume``, ``worker``, ``ui`` or a Streamlit server
starts a fresh interpreter, and a fresh interpreter spends about 4.4 s of CPU importing
LiteLLM, ADK, google-genai, SQLAlchemy and pydantic before the studio's own code runs (measured
on the 2-core CI machine: ``python -c "import litellm"`` alone is 4.8 s). The process tiers start
hundreds of them, and on two cores that import time was the largest part of CI (issue 33).

How: each pytest process starts one zygote (``python -m tests.zygote SOCKET``) the first time
it needs a process. The zygote imports those third-party libraries (:data:`PRELOAD`) and waits.
:func:`popen` sends it a command (``python -m MODULE ARGS``), an environment, a working
directory and the three standard streams (file descriptors over a Unix socket); the zygote
forks, and the child becomes that command: its streams, its folder, its environment, then
:func:`runpy.run_module` exactly as ``python -m`` does, and the interpreter's own ending
(non-daemon threads joined, ``atexit`` run, the exit code or the signal that ended it).
The test gets a :class:`ZygoteProcess`, which behaves as the :class:`subprocess.Popen` it
replaces: a real process with its own pid, killable with SIGKILL, its exit status reported by
the zygote that reaps it.

What stays the same as a cold start: the studio's own modules are never preloaded, so they
import in the child and read the child's environment (``STUDIO_HEARTBEAT_SECONDS`` and every
other setting read at import). What the zygote cannot reproduce, it refuses, and
:func:`popen` starts the process cold as before: a command that is not ``python -m``; an
argument of Popen other than streams, folder, environment and text mode (``preexec_fn``,
``start_new_session``, ``pass_fds``…); an environment that differs from the zygote's in a
variable the preloaded libraries read at import (:data:`READ_AT_IMPORT`). The few tests that
check the process itself (its ``/proc/PID/cmdline``, a terminal's Ctrl-C) start it cold.
``STUDIO_TEST_COLD_PROCESSES=1`` starts every process cold, for comparison.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]

PRELOAD = ("litellm", "google.genai", "google.adk.agents", "google.adk.runners",
           "google.adk.models.lite_llm", "google.adk.evaluation", "sqlalchemy", "pydantic",
           "psycopg", "streamlit", "streamlit.web.cli", "pandas", "plotly.graph_objects")
"""Third-party libraries only: their import is the cost, and none of them is one of ours."""

READ_AT_IMPORT = ("PYTHON", "LITELLM_", "STREAMLIT_", "OTEL_", "GOOGLE_GENAI_")
"""Prefixes of environment variables a preloaded library (or the interpreter) may read while it
imports: a child whose environment differs from the zygote's in one of these starts cold."""

MAY_DIFFER = frozenset({"PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONIOENCODING"})
"""Of those, the ones the child applies itself (its search path and its standard streams)."""

POPEN_ARGUMENTS = frozenset({"stdin", "stdout", "stderr", "cwd", "env", "text",
                             "universal_newlines", "encoding", "errors", "bufsize"})
"""The arguments of :class:`subprocess.Popen` a zygote child honours; any other starts cold."""

START_SECONDS = 180.0
"""How long the first process may wait for the zygote's imports (a loaded two-core machine)."""

MAX_REQUEST_BYTES = 1 << 20


# ------------------------------------------------------------------------ the test's side

def popen(args: list[str], **kwargs: Any) -> Process:
    """Start ``args`` like :class:`subprocess.Popen`, forked from this process's zygote when
    it can be (see the module's docstring), else cold."""
    request = _request(args, kwargs)
    if request is None:
        return subprocess.Popen(args, **kwargs)
    return ZygoteProcess(_zygote().path, args, request, kwargs)


def run(args: list[str], *, input: Any = None, capture_output: bool = False,
        timeout: float | None = None, check: bool = False, **kwargs: Any
        ) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` through :func:`popen`."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with popen(args, **kwargs) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    completed = subprocess.CompletedProcess(args, process.returncode or 0, out, err)
    if check:
        completed.check_returncode()
    return completed


def _request(args: list[str], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """What the zygote needs to become ``args``, or None when it cannot."""
    if os.environ.get("STUDIO_TEST_COLD_PROCESSES") == "1":
        return None
    if len(args) < 3 or args[0] != sys.executable or args[1] != "-m":
        return None
    if set(kwargs) - POPEN_ARGUMENTS or kwargs.get("bufsize", -1) not in (-1, 1):
        return None
    env = dict(os.environ if kwargs.get("env") is None else kwargs["env"])
    zygote_env = _zygote_environment()
    if any(_read_at_import(name) and env.get(name) != zygote_env.get(name)
           for name in set(env) | set(zygote_env)):
        return None
    return {"module": args[2], "args": list(args[3:]), "env": env,
            "cwd": str(kwargs.get("cwd") or os.getcwd()), "ignored": _ignored_signals()}


def _ignored_signals() -> list[int]:
    """The signals this process ignores: a process it starts inherits that (an exec resets
    handlers, not ignores; Popen restores only SIGPIPE and SIGXFSZ), so a zygote child must too
    (a pytest-xdist worker ignores SIGINT, for one)."""
    restored = {signal.SIGPIPE, signal.SIGXFSZ}
    return [int(signum) for signum in _catchable()
            if signum not in restored and signal.getsignal(signum) == signal.SIG_IGN]


def _catchable() -> list[signal.Signals]:
    return [signum for signum in signal.valid_signals()
            if isinstance(signum, signal.Signals)
            and signum not in (signal.SIGKILL, signal.SIGSTOP)]


def _read_at_import(name: str) -> bool:
    return name.startswith(READ_AT_IMPORT) and name not in MAY_DIFFER


def _zygote_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


class _Zygote:
    """This process's zygote: started once, ended with this process (its stdin is a pipe whose
    end this process holds; the zygote exits when it closes)."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="studio-zygote-")
        self.path = os.path.join(self.folder, "socket")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.zygote", self.path], cwd=ROOT,
            env=_zygote_environment(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + START_SECONDS
        while not os.path.exists(self.path):
            if self.process.poll() is not None:
                raise RuntimeError(f"the test zygote exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the test zygote did not listen within {START_SECONDS:.0f}s")
            time.sleep(0.05)
        atexit.register(self.close)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            os.rmdir(self.folder)


_ZYGOTE: list[_Zygote] = []
_ZYGOTE_LOCK = threading.Lock()


def _zygote() -> _Zygote:
    with _ZYGOTE_LOCK:
        if not _ZYGOTE or _ZYGOTE[0].process.poll() is not None:
            _ZYGOTE[:] = [_Zygote()]
        return _ZYGOTE[0]


class ZygoteProcess:
    """A process forked by the zygote, used as the :class:`subprocess.Popen` it stands for:
    ``pid``, ``poll``, ``wait``, ``send_signal``/``terminate``/``kill``, ``communicate``, the
    ``stdin``/``stdout``/``stderr`` pipes asked for, and ``returncode`` (negative: the signal
    that ended it)."""

    def __init__(self, path: str, args: list[str], request: dict[str, Any],
                 kwargs: dict[str, Any]) -> None:
        self.args = args
        self.returncode: int | None = None
        self.stdin: IO[Any] | None = None
        self.stdout: IO[Any] | None = None
        self.stderr: IO[Any] | None = None
        self._lock = threading.Lock()
        self._communicated: dict[str, bytes | str] = {}
        text = bool(kwargs.get("text") or kwargs.get("universal_newlines")
                    or kwargs.get("encoding") or kwargs.get("errors"))
        child_fds, mine, to_close = self._streams(kwargs)
        try:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self._socket.connect(path)
            socket.send_fds(self._socket, [json.dumps(request).encode()], child_fds)
            reply = self._socket.recv(64).decode()
        finally:
            for fd in to_close:
                os.close(fd)
        if not reply.startswith("pid "):
            raise RuntimeError(f"the test zygote could not start {args}: {reply!r}")
        self.pid = int(reply.split()[1])
        self._wrap(mine, text, kwargs)

    # -- streams, as Popen makes them
    @staticmethod
    def _streams(kwargs: dict[str, Any]) -> tuple[list[int], dict[str, int], list[int]]:
        """The child's three descriptors, this side's ends of its pipes, and what to close here
        once the zygote has its copies."""
        child_fds: list[int] = []
        mine: dict[str, int] = {}
        to_close: list[int] = []
        for index, name in enumerate(("stdin", "stdout", "stderr")):
            spec = kwargs.get(name)
            if spec is None:
                child_fds.append(index)
            elif spec == subprocess.PIPE:
                read, write = os.pipe()
                ours, theirs = (write, read) if index == 0 else (read, write)
                mine[name] = ours
                child_fds.append(theirs)
                to_close.append(theirs)
            elif spec == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR)
                child_fds.append(fd)
                to_close.append(fd)
            elif spec == subprocess.STDOUT and index == 2:
                child_fds.append(child_fds[1])
            elif isinstance(spec, int):
                child_fds.append(spec)
            else:
                child_fds.append(spec.fileno())
        return child_fds, mine, to_close

    def _wrap(self, mine: dict[str, int], text: bool, kwargs: dict[str, Any]) -> None:
        encoding, errors = kwargs.get("encoding"), kwargs.get("errors")
        for name, fd in mine.items():
            raw = open(fd, "wb" if name == "stdin" else "rb")  # noqa: SIM115 (kept open)
            stream: IO[Any] = raw
            if text:
                stream = io.TextIOWrapper(raw, encoding=encoding, errors=errors,
                                          write_through=name == "stdin")
            setattr(self, name, stream)

    # -- the process's status, from the zygote that reaps it
    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                self._read_status(blocking=False)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if self.returncode is None:
                    left = 0.2 if deadline is None else max(0.0, deadline - time.monotonic())
                    self._read_status(blocking=True, timeout=min(left, 0.2))
                if self.returncode is not None:
                    return self.returncode
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)

    def _read_status(self, *, blocking: bool, timeout: float | None = None) -> None:
        self._socket.settimeout(timeout if blocking else 0.0)
        try:
            message = self._socket.recv(64).decode()
        except (BlockingIOError, TimeoutError):
            return
        if message.startswith("exit "):
            self.returncode = int(message.split()[1])
        elif not message:  # the zygote is gone (its pytest process is ending)
            self.returncode = -signal.SIGKILL if not _pid_alive(self.pid) else None
            if self.returncode is None:
                time.sleep(0.05)
                return
        self._socket.close()

    # -- signals
    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    # -- everything at once
    def communicate(self, input: Any = None, timeout: float | None = None
                    ) -> tuple[Any, Any]:
        readers = [threading.Thread(target=self._read_all, args=(name,), daemon=True)
                   for name in ("stdout", "stderr") if getattr(self, name) is not None
                   and name not in self._communicated]
        for reader in readers:
            reader.start()
        if self.stdin is not None and not self.stdin.closed:
            if input:
                with contextlib.suppress(BrokenPipeError):
                    self.stdin.write(input)
            with contextlib.suppress(BrokenPipeError):
                self.stdin.close()
        self.wait(timeout)
        for reader in readers:
            reader.join()
        return self._communicated.get("stdout"), self._communicated.get("stderr")

    def _read_all(self, name: str) -> None:
        stream = getattr(self, name)
        self._communicated[name] = stream.read()
        stream.close()

    def __enter__(self) -> ZygoteProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.wait()


Process = ZygoteProcess | subprocess.Popen
"""What :func:`popen` returns."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ------------------------------------------------------------------------ the zygote's side

def serve(path: str) -> None:
    """Import :data:`PRELOAD`, then fork a child for each request until stdin closes."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    assert threading.active_count() == 1, "a preloaded library started a thread"
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)  # the socket exists only once it listens
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "request")
    selector.register(wake_read, selectors.EVENT_READ, "child")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "lifeline")
    children: dict[int, socket.socket] = {}
    while True:
        for key, _ in selector.select(timeout=1.0):
            if key.data == "lifeline" and not os.read(sys.stdin.fileno(), 1024):
                return
            if key.data == "child":
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_read, 1024):
                        pass
            if key.data == "request":
                connection, _ = listener.accept()
                _fork_for(connection, children)
        _reap(children)


def _fork_for(connection: socket.socket, children: dict[int, socket.socket]) -> None:
    message, fds, _, _ = socket.recv_fds(connection, MAX_REQUEST_BYTES, 3)
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _become(request, fds)  # never returns
    for fd in fds:
        os.close(fd)
    connection.sendall(f"pid {pid}".encode())
    children[pid] = connection


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.sendall(f"exit {os.waitstatus_to_exitcode(status)}".encode())
            connection.close()


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the child: take the request's streams, folder and environment, run its module as
    ``python -m`` would, and end as the interpreter ends."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        _take_signals(set(request["ignored"]))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(request["cwd"])
        _take_environment(request["env"])
        _reconfigure_streams(request["env"])
        sys.argv = [request["module"], *request["args"]]
        code = _run_as_main(request["module"])
    except BaseException:  # noqa: BLE001 (the child must end here, whatever happened)
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


def _take_signals(ignored: set[int]) -> None:
    """The dispositions a cold interpreter started by the requester would have: what the
    requester ignores stays ignored, every other signal is default, then Python's own start
    (SIGPIPE and SIGXFSZ ignored, SIGINT raising KeyboardInterrupt unless ignored)."""
    for signum in _catchable():
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _take_environment(env: dict[str, str]) -> None:
    """The child's environment, and the search path ``python -m`` builds from it: its working
    folder first, then its ``PYTHONPATH``, then the interpreter's own."""
    zygote_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ.clear()
    os.environ.update(env)
    rest = [p for p in sys.path[1:] if p not in zygote_paths]
    child_paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *child_paths, *rest]


def _reconfigure_streams(env: dict[str, str]) -> None:
    """``PYTHONUNBUFFERED`` and ``PYTHONIOENCODING`` as the child's interpreter would read them,
    and standard output line-buffered only on a terminal (the streams now point elsewhere)."""
    encoding, _, errors = env.get("PYTHONIOENCODING", "").partition(":")
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding=encoding or None, errors=errors or None,
                               write_through=unbuffered,
                               line_buffering=fd == 2 or os.isatty(fd))


def _run_as_main(module: str) -> int:
    """Run ``module`` as ``__main__`` and return the exit code the interpreter would; end by a
    signal where it would (an uncaught KeyboardInterrupt ends by SIGINT)."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 (printed as the interpreter prints it)
        sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
        code = 1
    _finish()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _finish() -> None:
    """The interpreter's ending: join non-daemon threads, run ``atexit``, flush the streams."""
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


if __name__ == "__main__":
    serve(sys.argv[1])
