"""The people of a shared studio: who is acting (signed in, or at the CLI), their roles, the
users an owner manages, each project's review settings, and comments on proposals.

A store without users is the local studio: one person, every action allowed, names typed as
before. The first user added must be an owner (``studio users add NAME --role owner``, from a
shell on the store's machine: the CLI user is trusted, as their files are); from then on only
an owner changes users, and every person acts under a checked identity:

- in the browser, the name they signed in with (Streamlit's ``st.login``, OpenID Connect);
- at the CLI, ``STUDIO_USER`` with its ``STUDIO_TOKEN`` (``studio users token NAME`` prints
  one, once; the store keeps its hash), or else the OS user, when an owner listed that name.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from studio.model.errors import AccessError, ConfigError, NotFoundError
from studio.model.limits import MAX_FEEDBACK_CHARS, MAX_NAME_CHARS, too_long
from studio.model.records import EventKind, Run
from studio.model.team import (
    MAX_REVIEWERS_PER_TRIAL,
    Actor,
    Permission,
    ReviewSettings,
    Role,
    User,
    parse_role,
)
from studio.store.seams import HasGetProject, TeamStore

USER_ENV = "STUDIO_USER"
TOKEN_ENV = "STUDIO_TOKEN"
LOCAL_NAME = "reviewer"
"""The name of a local person whose login name cannot be read."""


def os_user() -> str:
    """The login name of the person at this terminal (``USER``, else the system's)."""
    try:
        return os.environ.get("USER") or getpass.getuser() or LOCAL_NAME
    except Exception:  # no login name in some containers
        return LOCAL_NAME


def has_users(store: TeamStore) -> bool:
    """The store is a shared studio's: people act under checked identities with roles."""
    return store.user_count() > 0


# --------------------------------------------------------------------------- who is acting


def local_actor(name: str) -> Actor:
    """The local studio's one person, under the name they typed: every action allowed."""
    return Actor(name=(name or "").strip() or os_user())


def signed_in_actor(store: TeamStore, identity: str) -> Actor | None:
    """The person who signed in as ``identity``, with their role; None when no owner gave them
    one (they see nothing)."""
    user = store.get_user(identity)
    return Actor(user.name, user.role, verified=True) if user is not None else None


def cli_actor(store: TeamStore, env: Mapping[str, str] | None = None) -> Actor:
    """Who a CLI command acts as: the local studio's person (no users in the store), else
    ``STUDIO_USER`` proven by ``STUDIO_TOKEN``, else the OS user when listed.

    Raises:
        AccessError: a user without a token or with a wrong one, or an unlisted OS user; the
            message says what to do.
    """
    env = os.environ if env is None else env
    named = (env.get(USER_ENV) or "").strip()
    if not has_users(store):
        return local_actor(named or os_user())
    if named:
        return _token_actor(store, named, env.get(TOKEN_ENV) or "")
    name = os_user()
    user = store.get_user(name)
    if user is None:
        raise AccessError(
            f"this store has users and the OS user {name!r} is not one of them: act as a user "
            f"with {USER_ENV}=NAME and {TOKEN_ENV}=TOKEN (an owner prints a token with `studio "
            f"users token NAME`), or ask an owner to add you: `studio users add {name} --role "
            "reviewer`", action="using a shared store", actor=name)
    return Actor(user.name, user.role, verified=True)


def _token_actor(store: TeamStore, name: str, token: str) -> Actor:
    user = store.get_user(name)
    problem = _token_problem(user, token)
    if user is None or problem is not None:
        raise AccessError(f"{USER_ENV}={name}: {name!r} {problem}", action="acting as a user",
                          actor=name)
    return Actor(user.name, user.role, verified=True)


def _token_problem(user: User | None, token: str) -> str | None:
    """Why ``token`` does not prove ``user`` (None: it does)."""
    if user is None:
        return "is not a user of this store"
    if user.token_hash is None:
        return "has no token yet (an owner prints one: `studio users token NAME`)"
    if not token:
        return f"needs its token in {TOKEN_ENV}"
    if not hmac.compare_digest(user.token_hash, hash_token(token)):
        return f"was given a token that is not theirs ({TOKEN_ENV})"
    return None


def hash_token(token: str) -> str:
    """What the store keeps of a token: its SHA-256, never the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def author_for(actor: Actor, typed: str | None) -> str:
    """The name recorded with an action: what the local person typed (``--author``), else who
    is acting. A shared store takes no typed name: who acts is who signed the action.

    Raises:
        AccessError: a typed name other than the acting user's, on a shared store."""
    typed = (typed or "").strip()
    if not typed or typed == actor.name:
        return actor.name
    if actor.local:
        return typed
    raise AccessError(f"--author {typed!r} is not taken on a store with users: you act as "
                      f"{actor.name}, and your actions are recorded under that name",
                      action="naming the author", actor=actor.name)


# --------------------------------------------------------------------------- users


def add_user(store: TeamStore, actor: Actor, name: str, role: Role | str) -> User:
    """Give ``name`` a role (adding them when new). The store's first user must be an owner,
    and may be added by the local person; then only owners change users.

    Raises:
        AccessError: the actor is not an owner, the first user is not an owner, or the change
            would leave the store without an owner. ConfigError: a bad name.
    """
    role = parse_role(role)
    name = _checked_name(name)
    if has_users(store):
        actor.require(Permission.MANAGE_TEAM)
        _keep_an_owner(store, name, role)
    elif role is not Role.OWNER:
        raise AccessError(f"the store's first user must be an owner (the one who then adds the "
                          f"others): `studio users add {name} --role owner`",
                          action="adding the first user", needed=Role.OWNER.value)
    return store.save_user(name, role)


def remove_user(store: TeamStore, actor: Actor, name: str) -> None:
    """Take ``name``'s role away (their labels and decisions stay, under their name).

    Raises:
        AccessError: the actor is not an owner, or ``name`` is the last owner."""
    actor.require(Permission.MANAGE_TEAM)
    if store.get_user(name) is None:
        raise NotFoundError(f"user {name!r} does not exist")
    _keep_an_owner(store, name, None)
    store.remove_user(name)


def issue_token(store: TeamStore, actor: Actor, name: str) -> str:
    """A new CLI token for ``name`` (the old one stops working), shown once: the store keeps
    its hash. An owner issues any; a person may issue their own."""
    if actor.name != name or actor.local:
        actor.require(Permission.MANAGE_TEAM)
    if store.get_user(name) is None:
        raise NotFoundError(f"user {name!r} does not exist: add them first (`studio users add "
                            f"{name} --role reviewer`)")
    token = secrets.token_hex(32)  # hex: never shaped like a provider key, so never masked
    store.set_token_hash(name, hash_token(token))
    return token


def _keep_an_owner(store: TeamStore, name: str, role: Role | None) -> None:
    owners = {u.name for u in store.list_users() if u.role is Role.OWNER}
    if owners == {name} and role is not Role.OWNER:
        raise AccessError(f"{name} is the store's last owner: make another user an owner first",
                          action="removing the last owner", needed=Role.OWNER.value)


def _checked_name(name: str) -> str:
    name = (name or "").strip()
    if not name or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise ConfigError(f"{name!r} is not a user name: give the name a person signs in "
                          "with (their e-mail), without spaces", where="user", value=name)
    message = too_long(name, MAX_NAME_CHARS, "a user name")
    if message:
        raise ConfigError(message, where="user")
    return name


# --------------------------------------------------------------------------- review settings


def run_project(store: HasGetProject, run: Run) -> str:
    """The project a run's review settings come from: its project in the studio, else its
    project file's name (the run's name unless ``--name`` renamed it)."""
    if run.project_id is not None:
        try:
            return store.get_project(run.project_id).name
        except NotFoundError:
            pass
    return run.spec.project or run.name


def review_settings(store: TeamStore, run_id: str) -> ReviewSettings:
    """How ``run_id``'s trials are reviewed (its project's settings)."""
    return store.review_settings(run_project(store, store.get_run(run_id)))


def save_review_settings(store: TeamStore, actor: Actor, project: str, *,
                         reviewers_per_trial: int | None = None,
                         blind: bool | None = None) -> ReviewSettings:
    """Change a project's review settings (what is not given stays).

    Raises:
        AccessError: the actor is not an owner. ConfigError: a count out of range."""
    actor.require(Permission.MANAGE_TEAM)
    project = (project or "").strip()
    if not project:
        raise ConfigError("name the project whose review settings to change", where="project")
    current = store.review_settings(project)
    count = current.reviewers_per_trial if reviewers_per_trial is None else reviewers_per_trial
    if isinstance(count, bool) or not isinstance(count, int) or \
            not 1 <= count <= MAX_REVIEWERS_PER_TRIAL:
        raise ConfigError(f"reviewers per trial {count!r} is not a whole number from 1 to "
                          f"{MAX_REVIEWERS_PER_TRIAL}", where="reviewers_per_trial", value=count)
    return store.save_review_settings(current.model_copy(update={
        "reviewers_per_trial": count, "blind": current.blind if blind is None else bool(blind),
        "updated_by": actor.name}))


def blinded(settings: ReviewSettings, actor: Actor) -> bool:
    """Whether ``actor`` reviews ``settings``' project blind: a blind project's reviewers and
    viewers (owners adjudicate, and see everything)."""
    return settings.blind and not actor.can(Permission.ADJUDICATE)


# --------------------------------------------------------------------------- comments


@dataclass(frozen=True)
class Comment:
    proposal_id: int
    author: str
    text: str
    created_at: datetime


def comment_on_proposal(store: TeamStore, actor: Actor, proposal_id: int, text: str) -> Comment:
    """A reviewer's word on a proposal, for the owner who decides (kept in the run's log).

    Raises:
        AccessError: a viewer. ConfigError: an empty or too long text."""
    actor.require(Permission.COMMENT)
    text = (text or "").strip()
    if not text:
        raise ConfigError("a comment needs a text", where="comment")
    message = too_long(text, MAX_FEEDBACK_CHARS, "the comment")
    if message:
        raise ConfigError(message, where="comment")
    proposal = store.get_proposal(proposal_id)
    event = store.add_event(proposal.run_id, EventKind.PROPOSAL_COMMENT, proposal.iteration,
                            {"proposal_id": proposal_id, "author": actor.name, "text": text})
    return Comment(proposal_id, actor.name, text, event.created_at)


def proposal_comments(store: TeamStore, run_id: str, proposal_id: int | None = None
                      ) -> list[Comment]:
    """The run's comments on proposals (on one, with ``proposal_id``), oldest first."""
    found = []
    for event in store.events(run_id, kind=EventKind.PROPOSAL_COMMENT):
        payload = event.payload
        if proposal_id is not None and payload.get("proposal_id") != proposal_id:
            continue
        found.append(Comment(int(payload.get("proposal_id", 0)), str(payload.get("author", "")),
                             str(payload.get("text", "")), event.created_at))
    return found
