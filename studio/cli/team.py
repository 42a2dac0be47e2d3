"""People on a shared store: ``studio users``, ``review-settings``, ``adjudicate``,
``disagreements``, ``agreement`` and ``comment``."""

from __future__ import annotations

import argparse
import json
import sys

from studio.cli.common import _store, author_of
from studio.critics.agreement import agreement_from_store
from studio.engine.people.gates import adjudicate
from studio.model.errors import ConfigError
from studio.model.team import Role
from studio.projects.team import (
    add_user,
    cli_actor,
    comment_on_proposal,
    issue_token,
    remove_user,
    save_review_settings,
)
from studio.projects.team_review import disagreements, people_summary
from studio.views.team import agreement_lines, disagreement_lines, user_lines


def cmd_users(args: argparse.Namespace) -> int:
    """List the users, or add one, change a role, remove one, print a new token."""
    store = _store(args)
    if args.action == "list":
        print("\n".join(user_lines(store.list_users())))
        return 0
    if not args.name:
        raise ConfigError(f"`studio users {args.action}` needs the user's name",
                          where="name")
    actor = cli_actor(store)
    if args.action == "add":
        user = add_user(store, actor, args.name, args.role or Role.REVIEWER.value)
        print(f"{user.name} is a{'n' if user.role is Role.OWNER else ''} {user.role.value}")
    elif args.action == "role":
        if not args.new_role:
            raise ConfigError("`studio users role NAME ROLE` needs the role (owner, reviewer "
                              "or viewer)", where="role")
        user = add_user(store, actor, args.name, args.new_role)
        print(f"{user.name} is a{'n' if user.role is Role.OWNER else ''} {user.role.value}")
    elif args.action == "remove":
        remove_user(store, actor, args.name)
        print(f"{args.name} has no role here any more (their labels and decisions stay)")
    else:
        token = issue_token(store, actor, args.name)
        print(f"a new token for {args.name} (shown once; the old one no longer works):",
              file=sys.stderr)
        print(token)
    return 0


def cmd_review_settings(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.reviewers_per_trial is None and args.blind is None:
        settings = store.review_settings(args.project)
    else:
        settings = save_review_settings(store, args.actor, args.project,
                                        reviewers_per_trial=args.reviewers_per_trial,
                                        blind=args.blind)
    print(f"{settings.project}: {settings.reviewers_per_trial} reviewer(s) per trial, "
          f"{'blind' if settings.blind else 'not blind'}")
    return 0


def cmd_adjudicate(args: argparse.Namespace) -> int:
    record = adjudicate(args.trial_id, score=args.score, feedback=args.feedback,
                        corrected_output=args.corrected_output, author=author_of(args),
                        store=_store(args))
    print(f"adjudication {record.id}: trial {record.trial_id} score {record.score} by "
          f"{record.author}; the reviewers' labels are kept")
    return 0


def cmd_disagreements(args: argparse.Namespace) -> int:
    found = disagreements(_store(args), args.run_id, args.threshold)
    if args.json:
        print(json.dumps([d.model_dump(mode="json") for d in found], indent=2))
        return 0
    print("\n".join(disagreement_lines(found)))
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    store = _store(args)
    judge = agreement_from_store(store, args.run_id, args.threshold)
    people = people_summary(store, args.run_id, args.threshold)
    if args.json:
        print(json.dumps({"judge_vs_people": judge.model_dump(mode="json"),
                          "people": people.model_dump(mode="json")}, indent=2))
        return 0
    print("\n".join(agreement_lines(judge, people)))
    return 0


def cmd_comment(args: argparse.Namespace) -> int:
    comment = comment_on_proposal(_store(args), args.actor, args.proposal_id, args.text)
    print(f"comment on proposal {comment.proposal_id} by {comment.author}")
    return 0
