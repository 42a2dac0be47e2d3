"""People on a shared studio: their roles, what each role may do, and who is acting now.

A studio with no users in its store is the local, single-user default: whoever uses it (the
browser on localhost, the CLI) may do everything, under the name they type, as before roles
existed. Once the store has users, every action is done by an :class:`Actor` with a
:class:`Role`, and each action checks :data:`NEEDED_ROLE` for its :class:`Permission`; a refusal
says which role it needs (:class:`~studio.model.errors.AccessError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from studio.model.errors import AccessError


class Role(StrEnum):
    """What a person may do on a shared studio; each role may do what the ones below it may."""

    OWNER = "owner"
    """Configures projects and the team, starts and stops runs, gates proposals, applies an
    aligned critic, adjudicates disagreements between reviewers."""
    REVIEWER = "reviewer"
    """Labels and corrects trials, comments on proposals."""
    VIEWER = "viewer"
    """Reads everything, changes nothing."""


RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.OWNER: 2}


class Permission(StrEnum):
    """An action, named as a refusal says it ("deciding a proposal needs the owner role")."""

    READ = "reading the studio"
    LABEL = "labelling and correcting trials"
    COMMENT = "commenting on a proposal"
    GATE = "deciding a proposal"
    RUN = "starting, stopping and resuming runs"
    CONFIGURE = "changing a project"
    APPLY = "applying a run's result (an aligned critic, a candidate written into an agent folder)"
    ADJUDICATE = "adjudicating a disagreement"
    MANAGE_TEAM = "managing users and review settings"


NEEDED_ROLE: dict[Permission, Role] = {
    Permission.READ: Role.VIEWER,
    Permission.LABEL: Role.REVIEWER,
    Permission.COMMENT: Role.REVIEWER,
    Permission.GATE: Role.OWNER,
    Permission.RUN: Role.OWNER,
    Permission.CONFIGURE: Role.OWNER,
    Permission.APPLY: Role.OWNER,
    Permission.ADJUDICATE: Role.OWNER,
    Permission.MANAGE_TEAM: Role.OWNER,
}
"""The least role each action needs: the one table every check reads."""


def parse_role(text: str) -> Role:
    """``text`` as a role.

    Raises:
        AccessError: not one of owner, reviewer, viewer (naming them)."""
    try:
        return Role(str(text).strip().lower())
    except ValueError:
        raise AccessError(f"{text!r} is not a role: give one of "
                          f"{', '.join(r.value for r in Role)}", action="naming a role") from None


@dataclass(frozen=True)
class Actor:
    """Who is acting: a signed-in person, a CLI user the store knows, or the local studio.

    ``role`` is None for the local studio (a store without users): every action is allowed and
    the name is whatever was typed. ``verified`` says the name is an identity the studio
    checked (a sign-in, a token, a listed OS user): only then do that person's labels count
    as their own among several reviewers (:attr:`reviewer`); typed names in the local studio
    are one person, as before."""

    name: str
    role: Role | None = None
    verified: bool = False

    @property
    def local(self) -> bool:
        return self.role is None

    @property
    def reviewer(self) -> str | None:
        """The key this person's labels are kept under (None: the local studio's one person)."""
        return self.name if self.verified else None

    def can(self, permission: Permission) -> bool:
        return self.role is None or RANK[self.role] >= RANK[NEEDED_ROLE[permission]]

    def require(self, permission: Permission) -> None:
        """Raises AccessError naming the action, the role it needs and this person's role."""
        if not self.can(permission):
            raise refusal(self, permission)


def refusal(actor: Actor, permission: Permission) -> AccessError:
    """The error that refuses ``actor`` an action, in words a person can act on."""
    needed = NEEDED_ROLE[permission]
    role = actor.role.value if actor.role is not None else "no role"
    return AccessError(
        f"{permission.value} needs the {needed.value} role: {actor.name} is "
        f"{'a' if actor.role is not None else 'given'} {role} here. An owner can change it on "
        f"the Team page or with `studio users role {actor.name} {needed.value}`",
        action=permission.value, needed=needed.value, actor=actor.name,
        role=actor.role.value if actor.role is not None else None)


class User(BaseModel):
    """A person the studio knows: the name they sign in with (their e-mail, or the provider's
    subject id), their role, and a CLI token (only its hash is kept)."""

    name: str
    role: Role
    token_hash: str | None = None
    """SHA-256 of the token ``studio users token`` printed once (None: none issued)."""
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def has_token(self) -> bool:
        return self.token_hash is not None


DEFAULT_REVIEWERS_PER_TRIAL = 1
MAX_REVIEWERS_PER_TRIAL = 20


class ReviewSettings(BaseModel):
    """How a project's trials are reviewed: by how many people each, and whether blind."""

    project: str = ""
    """The project's name ("" for the defaults of a run without a project)."""
    reviewers_per_trial: int = Field(default=DEFAULT_REVIEWERS_PER_TRIAL, ge=1,
                                     le=MAX_REVIEWERS_PER_TRIAL)
    """The review queue offers a trial until this many people labelled it."""
    blind: bool = False
    """A reviewer sees neither the judge's score nor the others' labels on a trial until they
    gave theirs (owners, who adjudicate, see everything)."""
    updated_by: str | None = None
    updated_at: datetime | None = None

    @property
    def team(self) -> bool:
        """Several people label each trial, or they label blind."""
        return self.reviewers_per_trial > 1 or self.blind
