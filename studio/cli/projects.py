"""Project files and the studio itself: ``studio validate``, ``schema`` and ``ui``."""

from __future__ import annotations

import argparse
import json
import os
import sys

from studio.model.errors import ConfigError
from studio.projects.files import (
    ALLOW_CODE_REFS_ENV,
    PROJECT_JSON_SCHEMA,
    check_project_datasets,
    load_project,
)
from studio.projects.served_agents import AGENTS_DIR_ENV, check_agents_dir
from studio.projects.serving import (
    ALLOW_REMOTE_ENV,
    auth_section,
    check_bind_address,
    exposure,
    is_loopback,
    secrets_files,
    serve,
    sign_in_problem,
    streamlit_command,
)
from studio.projects.session_import import SESSIONS_URL_ENV


def cmd_validate(args: argparse.Namespace) -> int:
    """Every check ``studio run`` makes before its first model call (:func:`check_project`)."""
    project, base_dir = load_project(args.project)
    sets = check_project_datasets(project, base_dir, source=str(args.project))
    test = f", {len(sets.test)} test rows" if sets.test is not None else ""
    print(f"{args.project}: ok ({len(sets.train)} training rows, "
          f"{len(sets.val) if sets.val is not None else 'no'} validation rows{test})")
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    """Start the studio's web server with its settings, on this machine unless told otherwise:
    beyond localhost only with sign-in configured, or when told ``--insecure-no-login`` (said
    plainly: what that exposes)."""
    problem = sign_in_problem(auth_section(secrets_files()))
    check_bind_address(args.address, allow_remote=args.allow_remote, sign_in=problem is None)
    env = server_environment(args)
    command = streamlit_command(address=args.address, port=args.port,
                                allowed_hosts=args.allowed_host or None)
    print(f"studio on http://{args.address}:{args.port}"
          + (" (sign-in required)" if problem is None else ""), file=sys.stderr)
    if problem is not None and not is_loopback(args.address):
        print(exposure(args.address, args.port), file=sys.stderr)
    if args.print_command:
        print(" ".join(command))
        return 0
    try:
        return serve(command, env)
    except KeyboardInterrupt:
        return 130


def server_environment(args: argparse.Namespace) -> dict[str, str]:
    """The environment the Streamlit server starts with: this one plus the command's settings."""
    env = dict(os.environ)
    if args.allow_remote:
        env[ALLOW_REMOTE_ENV] = "1"
    if args.allow_code_refs:
        env[ALLOW_CODE_REFS_ENV] = "1"
    if args.db:
        env["STUDIO_DB_URL"] = args.db
    if args.agents is not None:
        env[AGENTS_DIR_ENV] = str(check_agents_dir(args.agents))
    if args.sessions:
        if args.agents is None:
            raise ConfigError("--sessions names the session database the Projects page imports "
                              "from for the agents of --agents DIR: give --agents too",
                              where="--sessions")
        env[SESSIONS_URL_ENV] = args.sessions
    return env


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(PROJECT_JSON_SCHEMA, indent=2))
    return 0
