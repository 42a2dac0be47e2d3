"""``python -m tests.processes.zygote_probe MODE``: a process that reports what it sees, for
tests/processes/test_zygote.py (a zygote child must see what a cold start would)."""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time


def report() -> dict[str, object]:
    preloaded = {name: name in sys.modules for name in ("litellm", "studio")}
    from studio.runtime import timing

    return {"pid": os.getpid(), "cwd": os.getcwd(), "argv": sys.argv, "path0": sys.path[0],
            "preloaded": preloaded, "heartbeat": timing.HEARTBEAT_SECONDS,
            "marker": os.environ.get("PROBE_MARKER"), "main": __name__,
            "signals": {signum.name: str(signal.getsignal(signum)) for signum in (
                signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGUSR1,
                signal.SIGCHLD)}}


def append(path: str, line: str) -> None:
    with open(path, "a") as log:
        log.write(line + "\n")


def outlive_main(path: str) -> None:
    """Still running when the main module returns (not a wait: whatever its length, a joined
    thread writes before ``atexit`` does, and an unjoined one never writes)."""
    time.sleep(0.3)
    append(path, "thread")


def main(mode: str, argument: str = "") -> None:
    if mode == "report":
        print(json.dumps(report()))
    elif mode == "exit":
        sys.exit(int(argument))
    elif mode == "raise":
        raise ValueError("the probe's own error")
    elif mode == "ending":  # the interpreter's ending: threads joined, then atexit
        atexit.register(append, argument, "atexit")
        threading.Thread(target=outlive_main, args=(argument,)).start()
    elif mode == "echo":
        sys.stdout.write(sys.stdin.read().upper())
    elif mode == "sleep":
        print("ready", flush=True)
        time.sleep(600)


if __name__ == "__main__":
    main(*sys.argv[1:])
