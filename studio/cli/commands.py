"""``studio``: run projects headless into the same store the studio watches, and export runs.

    studio run project.yaml [--review review] [--max-iterations N] [--db URL]
    studio run my_agent --evalset my_agent/x.evalset.json [--val-evalset FILE]
               [--sampler-config FILE] [--optimizer-config FILE] [--criteria FILE]
               [--model M] [--critic-model M] [--reflection-model M]
               [--write-project FILE]              (an ADK agent folder, as adk optimize)
    studio resume RUN_ID [--max-metric-calls N]
    studio stop RUN_ID | pause RUN_ID | unpause RUN_ID
                                                   (the Run page's buttons, from any shell)
    studio queue project.yaml [--queue NAME]       (run by the next free `studio worker`)
    studio worker [--max-runs N] [--poll-seconds S] [--queue NAME] [--build-tries N]
    studio workers
    studio runs
    studio trials RUN_ID [--candidate ID] [--phase P] [--offset N] [--limit N] [--json]
    studio proposals RUN_ID [--pending] [--json]
    studio export RUN_ID --format jsonl|csv|adk-evalset-result [--out PATH]
    studio test RUN_ID                             (score baseline and best on the test set)
    studio fork RUN_ID --candidate N [--critic FILE_OR_YAML] [--dataset PATH]
                [--config key=value ...] [--queue NAME]
    studio align RUN_ID [--held-out 0.3] [--review review] [--max-iterations N] [--queue NAME]
                        [--part NAME]
                                                   (align the run's critic with its corrections)
    studio align-report ALIGN_RUN_ID [--json] [--no-measure]   (before/after on held-out labels)
    studio align-apply ALIGN_RUN_ID                (a project copy judging with the aligned critic)
    studio rescore RUN_ID --critic-from ALIGN_RUN_ID [--json]
    studio blame RUN_ID [--candidate N] [--json]   (where each sentence came from)
    studio apply RUN_ID [--candidate N] [--to FOLDER] [--dry-run]
                                                   (write the best into the agent's source)
    studio decide PROPOSAL_ID accept|reject|edit|stop [--reason TEXT] [--text TEXT]
                                                   (stop ends the run; the proposal waits again)
    studio override TRIAL_ID [--score X] [--feedback TEXT] [--corrected-output TEXT]
                    [--dimension NAME=X ...]
    studio adjudicate TRIAL_ID [--score X] [--feedback TEXT]   (an owner settles a disagreement)
    studio disagreements RUN_ID [--threshold X] [--json]       (trials the reviewers differ on)
    studio agreement [RUN_ID] [--threshold X] [--json]         (judge vs people, people vs people)
    studio comment PROPOSAL_ID TEXT                (a reviewer's word to the owner who decides)
    studio users [add NAME --role R | role NAME R | remove NAME | token NAME]
    studio review-settings PROJECT [--reviewers-per-trial N] [--blind | --not-blind]
    studio import-sessions URL --app NAME (--out FILE | --project NAME) [--session ID ...]
                [--user ID] [--since T] [--until T] [--state KEY[=VALUE] ...] [--all-turns]
                                                   (an ADK app's recorded sessions as examples)
    studio validate project.yaml
    studio schema
    studio ui [--port N] [--host ADDR [--insecure-no-login]] [--allow-code-refs] [--agents DIR]
              [--sessions URL]

On a store with users (a team's), every command but worker, workers, validate, schema and ui
acts as STUDIO_USER (proven by STUDIO_TOKEN) or else the OS user, and needs that user's role.
"""

from __future__ import annotations

import argparse
import importlib
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import studio.model.limits as limits

COMMANDS: dict[str, str] = {
    "run": "studio.cli.runs:cmd_run",
    "queue": "studio.cli.runs:cmd_queue",
    "resume": "studio.cli.runs:cmd_resume",
    "stop": "studio.cli.steering:cmd_stop",
    "pause": "studio.cli.steering:cmd_pause",
    "unpause": "studio.cli.steering:cmd_unpause",
    "test": "studio.cli.runs:cmd_test",
    "fork": "studio.cli.runs:cmd_fork",
    "worker": "studio.cli.workers:cmd_worker",
    "workers": "studio.cli.workers:cmd_workers",
    "runs": "studio.cli.listing:cmd_runs",
    "trials": "studio.cli.data:cmd_trials",
    "export": "studio.cli.data:cmd_export",
    "blame": "studio.cli.data:cmd_blame",
    "apply": "studio.cli.apply:cmd_apply",
    "proposals": "studio.cli.proposals:cmd_proposals",
    "decide": "studio.cli.proposals:cmd_decide",
    "override": "studio.cli.proposals:cmd_override",
    "align": "studio.cli.aligning:cmd_align",
    "align-report": "studio.cli.aligning:cmd_align_report",
    "align-apply": "studio.cli.aligning:cmd_align_apply",
    "rescore": "studio.cli.aligning:cmd_rescore",
    "import-sessions": "studio.cli.sessions:cmd_import_sessions",
    "validate": "studio.cli.projects:cmd_validate",
    "schema": "studio.cli.projects:cmd_schema",
    "ui": "studio.cli.projects:cmd_ui",
    "adjudicate": "studio.cli.team:cmd_adjudicate",
    "disagreements": "studio.cli.team:cmd_disagreements",
    "agreement": "studio.cli.team:cmd_agreement",
    "comment": "studio.cli.team:cmd_comment",
    "users": "studio.cli.team:cmd_users",
    "review-settings": "studio.cli.team:cmd_review_settings",
}
"""Each command's function as ``module:function``. A command's module is imported when the
command runs, and only then: this table is the one place the CLI imports lazily, so
``studio --help`` does not load the engine, the store or ADK."""


def load(reference: str) -> Any:
    """The object a ``module:attribute`` reference names, its module imported now."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


PERMISSIONS: dict[str, str] = {
    **dict.fromkeys(("run", "queue", "resume", "test", "fork", "align", "align-report",
                     "rescore", "stop", "pause", "unpause"), "RUN"),
    "align-apply": "APPLY", "apply": "APPLY", "import-sessions": "CONFIGURE",
    "decide": "GATE", "override": "LABEL", "comment": "COMMENT",
    "adjudicate": "ADJUDICATE", "review-settings": "READ",
    **dict.fromkeys(("runs", "trials", "proposals", "export", "blame", "agreement",
                     "disagreements"), "READ"),
}
"""What each command needs (a :class:`~studio.model.team.Permission` name) on a store with
users; the acting user (``args.actor``) is checked before the command runs. Not listed: the
processes and checks no person's role applies to (worker, workers, validate, schema, ui) and
``users``, which checks its own (the first user is added by whoever runs it)."""


def run_command(args: argparse.Namespace) -> int:
    """Run the command ``args`` were parsed for, as the acting user when it needs a role."""
    if args.command in PERMISSIONS:
        args.actor = load("studio.cli.common:acting_user")(args, PERMISSIONS[args.command])
    return load(COMMANDS[args.command])(args)


def _run_options(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A project and the settings that override its ``run:`` section (run and queue)."""
    command.add_argument("project", type=Path, help="a project file, or an ADK agent folder "
                         "(with --evalset or --sampler-config, as `adk optimize` takes them)")
    command.add_argument("--review", choices=["auto", "review"])
    command.add_argument("--max-iterations", type=whole_number(0))
    command.add_argument("--max-metric-calls", type=whole_number(1))
    command.add_argument("--seed", type=whole_number(0))
    command.add_argument("--name", type=bounded_name)
    _agent_folder_options(command.add_argument_group(
        "an ADK agent folder instead of a project file"))
    return command


def _agent_folder_options(group: argparse._ArgumentGroup) -> None:
    """What ``adk optimize`` takes, for ``studio run my_agent``
    (:mod:`studio.projects.adk_runs`)."""
    group.add_argument("--evalset", action="append", type=Path, default=[],
                       help="an eval set (*.evalset.json, *.test.json) to train on (repeatable)")
    group.add_argument("--val-evalset", action="append", type=Path, default=[],
                       help="an eval set to validate on (repeatable; default: the train set)")
    group.add_argument("--sampler-config", type=Path, help="adk optimize's sampler config "
                       "(app_name, train_eval_set, eval_config, ...) instead of --evalset")
    group.add_argument("--optimizer-config", type=Path, help="adk optimize's optimizer config "
                       "(optimizer_model, max_metric_calls, reflection_minibatch_size)")
    group.add_argument("--criteria", type=Path, help="ADK eval criteria (test_config.json); "
                       "default: the sampler config's, else ADK's default")
    group.add_argument("--model", help="run every agent of the folder's tree (sub-agents, "
                       "AgentTools, graph nodes) on this model, with no edit to its files (a "
                       "LiteLLM string such as scripted/demo or openai/gpt-4o-mini, or an ADK "
                       "name such as gemini-2.5-flash)")
    group.add_argument("--critic-model", help="the judge of criteria judged by a model "
                       "(default: the agent's own model)")
    group.add_argument("--reflection-model", help="the model that writes the proposals "
                       "(default: the optimizer config's, else the agent's own model)")
    group.add_argument("--write-project", type=Path, metavar="FILE",
                       help="also save the equivalent project file")



def _import_sessions(command: argparse.ArgumentParser) -> None:
    command.add_argument("url", help="the session database: a SQLite file or URL "
                         "(sqlite:///sessions.db), or a PostgreSQL URL")
    command.add_argument("--app", required=True, help="the app name the Runner recorded with")
    command.add_argument("--out", type=Path, help="NAME.evalset.json (an ADK eval set) or "
                         "NAME.jsonl (rows)")
    command.add_argument("--project", help="a stored project whose training rows they become")
    command.add_argument("--session", action="append", default=[], metavar="ID",
                         help="only this session (repeatable)")
    command.add_argument("--user", help="only this user's sessions")
    command.add_argument("--since", type=moment, help="sessions updated since (ISO date/time)")
    command.add_argument("--until", type=moment, help="sessions updated until (ISO date/time)")
    command.add_argument("--state", action="append", default=[], metavar="KEY[=VALUE]",
                         help="sessions whose state has KEY (equal to VALUE) (repeatable)")
    command.add_argument("--all-turns", action="store_true",
                         help="every turn, not only each session's first (a later turn is "
                              "scored without the conversation before it)")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="studio", description=__doc__.split("\n")[0])
    root.add_argument("--db", help="database URL (default: STUDIO_DB_URL or the SQLite file)")
    sub = root.add_subparsers(dest="command", required=True)
    _run_options(sub.add_parser("run", help="run a project headless"))
    queue = _run_options(sub.add_parser(
        "queue", help="queue a project's run for `studio worker` processes"))
    queue.add_argument("--queue", default="default", type=bounded_queue,
                       help="queue name (default: default)")
    worker = sub.add_parser("worker", help="run queued runs, one at a time, until SIGTERM")
    worker.add_argument("--max-runs", type=whole_number(1), help="exit after N runs")
    worker.add_argument("--poll-seconds", type=positive_seconds, default=1.0,
                        help="how often an idle worker looks for a run (default 1)")
    worker.add_argument("--queue", default="default", type=bounded_queue,
                        help="queue name (default: default)")
    worker.add_argument("--build-tries", type=whole_number(1), default=5,
                        help="a run no worker can build (a key missing on their machines) "
                             "goes back to the queue; after N tries it fails (default 5)")
    workers = sub.add_parser("workers", help="list live workers")
    workers.add_argument("--queue", type=bounded_queue)
    resume = sub.add_parser("resume", help="continue a stopped or orphaned run")
    resume.add_argument("run_id")
    resume.add_argument("--max-metric-calls", type=whole_number(1),
                        help="raise the run's budget (e.g. to pay for an edit at its gate)")
    for name, what in (("stop", "stop a run at its next step, wherever it runs (resumable)"),
                       ("pause", "hold a run before its next model call"),
                       ("unpause", "let a paused run go on")):
        sub.add_parser(name, help=what).add_argument("run_id")
    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--limit", type=whole_number(1), default=20)
    export = sub.add_parser("export", help="write a run's candidates and trials")
    export.add_argument("run_id")
    export.add_argument("--format", choices=["jsonl", "csv", "adk-evalset-result"],
                        default="jsonl", help="adk-evalset-result: the best candidate's "
                        "validation results as ADK's EvalSetResult (adk web lists them)")
    export.add_argument("--out")
    export.add_argument("--threshold", type=float, default=0.5,
                        help="adk-evalset-result: the score a case passes at when its "
                        "critic is not ADK's criteria, or a person corrected it (default 0.5); "
                        "ADK's criteria keep each metric's own threshold")
    test = sub.add_parser("test", help="score a run's baseline and best candidate on its "
                          "held-out test set (the overfitting guard)")
    test.add_argument("run_id")
    test.add_argument("--json", action="store_true")
    fork = sub.add_parser("fork", help="start a new run seeded with any candidate of a run")
    fork.add_argument("run_id")
    fork.add_argument("--candidate", type=whole_number(0), required=True,
                      help="the candidate's number (#N on the Compare page)")
    fork.add_argument("--critic", help="another critic: a YAML file (a critic section or a "
                      "project file) or the YAML itself")
    fork.add_argument("--dataset", type=Path, help="other examples: a CSV/JSONL of training "
                      "rows, or a YAML file with a dataset section (train, val, test)")
    fork.add_argument("--config", action="append", metavar="KEY=VALUE",
                      help="a run setting, e.g. max_iterations=5 (repeatable)")
    fork.add_argument("--name", type=bounded_name)
    fork.add_argument("--queue", type=bounded_queue,
                      help="queue the fork for `studio worker` instead of running it")
    align = sub.add_parser("align", help="evolve a run's critic to agree with its corrections")
    align.add_argument("run_id")
    align.add_argument("--held-out", type=float, default=0.3,
                       help="share of the labels kept out of the loop to test on (default 0.3)")
    align.add_argument("--threshold", type=float, default=0.5,
                       help="pass threshold of kappa and the confusion matrix (default 0.5)")
    align.add_argument("--review", choices=["auto", "review"])
    align.add_argument("--max-iterations", type=whole_number(0))
    align.add_argument("--seed", type=whole_number(0))
    align.add_argument("--queue", type=bounded_queue,
                       help="queue the align run for `studio worker`")
    align.add_argument("--part", help="the part of a weighted critic to align (its label or "
                                      "evaluator name), when several could be")
    align_report = sub.add_parser("align-report", help="an align run's agreement before/after")
    align_report.add_argument("align_run_id")
    align_report.add_argument("--json", action="store_true")
    align_report.add_argument("--no-measure", action="store_true",
                              help="do not run a judge on the held-out labels when its "
                                   "measurement is missing")
    align_apply = sub.add_parser("align-apply", help="copy the source project with the aligned "
                                 "critic, for the next run")
    align_apply.add_argument("align_run_id")
    rescore = sub.add_parser("rescore", help="score a run's trials again with an aligned critic "
                             "(a new scoring pass; old scores kept)")
    rescore.add_argument("run_id")
    rescore.add_argument("--critic-from", required=True, metavar="ALIGN_RUN_ID")
    rescore.add_argument("--json", action="store_true")
    blame = sub.add_parser("blame", help="which proposal wrote each sentence of a candidate")
    blame.add_argument("run_id")
    blame.add_argument("--candidate", type=whole_number(0),
                       help="candidate index #N (default: the best)")
    blame.add_argument("--json", action="store_true")
    apply = sub.add_parser("apply", help="write a run's best candidate into the agent "
                           "folder's source (where each text is defined), print the diff")
    apply.add_argument("run_id")
    apply.add_argument("--candidate", type=whole_number(0),
                       help="candidate #N instead of the run's best")
    apply.add_argument("--to", type=Path, metavar="FOLDER",
                       help="the agent folder to write into (default: the one the run ran)")
    apply.add_argument("--dry-run", action="store_true",
                       help="print the diff, write nothing")
    apply.add_argument("--author", type=bounded_name,
                       help="who applies it, as recorded on the run (default: your login)")
    decide = sub.add_parser("decide", help="answer a proposal waiting at the gate")
    decide.add_argument("proposal_id", type=whole_number(1))
    decide.add_argument("action", choices=["accept", "reject", "edit", "stop"])
    decide.add_argument("--reason")
    decide.add_argument("--text", help="the edited text (for edit)")
    decide.add_argument("--author", type=bounded_name,
                        help="the name recorded (the local studio only; default: your login)")
    override = sub.add_parser("override", help="correct a trial's score and/or feedback")
    override.add_argument("trial_id", type=whole_number(1))
    override.add_argument("--score", type=float)
    override.add_argument("--feedback")
    override.add_argument("--corrected-output", help="what the answer should have been (the "
                          "reflection reads it beside your feedback)")
    override.add_argument("--dimension", action="append", metavar="NAME=SCORE", default=[],
                          help="your score of one critic dimension (repeatable)")
    override.add_argument("--author", type=bounded_name,
                          help="the name recorded (the local studio only; default: your login)")
    _team_commands(sub)
    proposals = sub.add_parser("proposals", help="list a run's proposals and their decisions")
    proposals.add_argument("run_id")
    proposals.add_argument("--pending", action="store_true",
                           help="only the proposal waiting for your decision")
    proposals.add_argument("--json", action="store_true")
    trials = sub.add_parser("trials", help="list a run's trials with corrected scores")
    trials.add_argument("run_id")
    trials.add_argument("--candidate", type=whole_number(0),
                        help="only candidate #N's trials (its number in the run, as listed)")
    trials.add_argument("--phase", help="parent, child, valset or test")
    trials.add_argument("--offset", type=whole_number(0), default=0,
                        help="skip the first N matching trials (oldest first)")
    trials.add_argument("--limit", type=whole_number(1), help="show at most N trials")
    trials.add_argument("--json", action="store_true")
    _import_sessions(sub.add_parser(
        "import-sessions", help="an ADK app's recorded sessions (DatabaseSessionService, or "
        "adk web's .adk/session.db) as examples: the user's message in, the agent's reply "
        "kept as the reference"))
    validate = sub.add_parser("validate", help="check a project file and its datasets")
    validate.add_argument("project", type=Path)
    sub.add_parser("schema", help="print the project file's JSON Schema")
    ui = sub.add_parser("ui", help="start the studio in the browser (localhost only)")
    ui.add_argument("--port", type=whole_number(1, 65535), default=8501)
    ui.add_argument("--host", "--address", dest="address", default="localhost",
                    help="bind address; beyond localhost it needs sign-in ([auth] in "
                         ".streamlit/secrets.toml) or --insecure-no-login")
    ui.add_argument("--insecure-no-login", "--allow-remote", dest="allow_remote",
                    action="store_true",
                    help="serve beyond localhost without sign-in: anyone who reaches the port "
                         "acts with every role (only behind an authenticating proxy)")
    ui.add_argument("--allowed-host", action="append",
                    help="a Host name the browser uses to reach the server (repeatable)")
    ui.add_argument("--allow-code-refs", action="store_true",
                    help="let projects from the browser load Python agents (agent.ref)")
    ui.add_argument("--agents", type=Path, metavar="DIR",
                    help="offer the ADK agent folders under DIR on the Projects page (as "
                    "`adk web DIR`; trusted: you chose them)")
    ui.add_argument("--sessions", metavar="URL", help="with --agents: a session database "
                    "(DatabaseSessionService's URL) the Projects page may import examples "
                    "from, besides the SQLite files under DIR")
    ui.add_argument("--print-command", action="store_true", help=argparse.SUPPRESS)
    return root


def _team_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """People on a shared store (:mod:`studio.cli.team`)."""
    adjudicate = sub.add_parser("adjudicate", help="settle a trial the reviewers disagree on "
                                "(owner; everyone's labels are kept)")
    adjudicate.add_argument("trial_id", type=whole_number(1))
    adjudicate.add_argument("--score", type=float)
    adjudicate.add_argument("--feedback")
    adjudicate.add_argument("--corrected-output")
    disagreements = sub.add_parser("disagreements", help="a run's trials its reviewers "
                                   "labelled differently")
    disagreements.add_argument("run_id")
    disagreements.add_argument("--threshold", type=float, default=0.5)
    disagreements.add_argument("--json", action="store_true")
    agreement = sub.add_parser("agreement", help="judge vs people and people vs people "
                               "(Krippendorff's alpha, Cohen's kappa)")
    agreement.add_argument("run_id", nargs="?", help="one run (default: every run)")
    agreement.add_argument("--threshold", type=float, default=0.5)
    agreement.add_argument("--json", action="store_true")
    comment = sub.add_parser("comment", help="comment on a proposal (reviewer)")
    comment.add_argument("proposal_id", type=whole_number(1))
    comment.add_argument("text")
    users = sub.add_parser("users", help="list the store's users, or change them (owner)")
    users.add_argument("action", nargs="?", default="list",
                       choices=["list", "add", "role", "remove", "token"])
    users.add_argument("name", nargs="?")
    users.add_argument("new_role", nargs="?", metavar="ROLE",
                       help="for `role`: owner, reviewer or viewer")
    users.add_argument("--role", choices=["owner", "reviewer", "viewer"],
                       help="for `add` (default: reviewer)")
    settings = sub.add_parser("review-settings", help="how a project's trials are reviewed: "
                              "by how many people each, blind or not")
    settings.add_argument("project", help="the project's name")
    settings.add_argument("--reviewers-per-trial", type=whole_number(1, 20))
    blind = settings.add_mutually_exclusive_group()
    blind.add_argument("--blind", dest="blind", action="store_const", const=True)
    blind.add_argument("--not-blind", dest="blind", action="store_const", const=False)


STORE_INTEGER_MAX = 2**63 - 1
"""The largest id or count a store holds (SQLite and PostgreSQL integers are 64-bit signed):
beyond it a query raises ``OverflowError`` instead of finding nothing."""


def whole_number(minimum: int, maximum: int = STORE_INTEGER_MAX):
    """An argparse type for ids and counts: an integer in ``[minimum, maximum]``, refused with
    the value and the range named (argparse names the argument)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or value > maximum:
            bound = f"between {minimum} and {maximum}" if maximum != STORE_INTEGER_MAX else \
                f"at least {minimum} (and at most 2**63-1)"
            raise argparse.ArgumentTypeError(f"{value} is not allowed: give a number {bound}")
        return value
    return parse


def bounded_name(text: str) -> str:
    """An argparse type: a name (run, author) that fits its database column on every backend."""
    return _bounded(text, "MAX_NAME_CHARS")


def bounded_queue(text: str) -> str:
    """An argparse type: a queue name that fits its database column on every backend."""
    return _bounded(text, "MAX_QUEUE_CHARS")


def _bounded(text: str, limit_name: str) -> str:
    limit = getattr(limits, limit_name)
    if len(text) > limit:
        raise argparse.ArgumentTypeError(
            f"{len(text):,} characters is too long: the limit is {limit:,}; shorten it")
    return text


def moment(text: str) -> datetime:
    """An argparse type: an ISO date or time (``2026-11-01``, ``2026-11-01T12:00``), local
    time unless it names its zone."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date or time such as 2026-11-01 "
                                         "or 2026-11-01T12:00") from None
    return value if value.tzinfo else value.astimezone()


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give seconds above 0")
    return value
