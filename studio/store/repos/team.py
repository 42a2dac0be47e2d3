"""The people of a shared studio (users and their roles) and how each project is reviewed."""

from __future__ import annotations

from sqlalchemy import delete, func, insert, select, update

import studio.store.schema as t
from studio.model.errors import NotFoundError
from studio.model.records import utcnow
from studio.model.team import ReviewSettings, Role, User
from studio.store.repos.base import Repository, guard, to_model


class TeamRepository(Repository):
    """Users and their roles; each project's review settings."""

    @guard
    def user_count(self) -> int:
        """How many users the store has (0: the local, single-user studio)."""
        with self.engine.connect() as c:
            return c.execute(select(func.count()).select_from(t.users)).scalar_one()

    @guard
    def get_user(self, name: str) -> User | None:
        with self.engine.connect() as c:
            row = c.execute(select(t.users).where(t.users.c.name == name)).first()
        return to_model(User, row)

    @guard
    def list_users(self) -> list[User]:
        with self.engine.connect() as c:
            return [to_model(User, row) for row in
                    c.execute(select(t.users).order_by(t.users.c.name))]

    @guard
    def save_user(self, name: str, role: Role) -> User:
        """Add ``name`` with ``role``, or give an existing user that role (token kept)."""
        now = utcnow()
        with self.engine.begin() as c:
            changed = c.execute(update(t.users).where(t.users.c.name == name)
                                .values(role=role.value, updated_at=now)).rowcount
            if not changed:
                c.execute(insert(t.users).values(name=name, role=role.value, created_at=now,
                                                 updated_at=now))
        return self._must(name)

    @guard
    def set_token_hash(self, name: str, token_hash: str | None) -> User:
        with self.engine.begin() as c:
            c.execute(update(t.users).where(t.users.c.name == name)
                      .values(token_hash=token_hash, updated_at=utcnow()))
        return self._must(name)

    @guard
    def remove_user(self, name: str) -> None:
        with self.engine.begin() as c:
            if not c.execute(delete(t.users).where(t.users.c.name == name)).rowcount:
                raise NotFoundError(f"user {name!r} does not exist")

    def _must(self, name: str) -> User:
        user = self.get_user(name)
        if user is None:
            raise NotFoundError(f"user {name!r} does not exist")
        return user

    @guard
    def review_settings(self, project: str) -> ReviewSettings:
        """The project's review settings (the defaults when none were saved)."""
        with self.engine.connect() as c:
            row = c.execute(select(t.review_settings)
                            .where(t.review_settings.c.project == project)).first()
        return to_model(ReviewSettings, row) or ReviewSettings(project=project)

    @guard
    def save_review_settings(self, settings: ReviewSettings) -> ReviewSettings:
        values = settings.model_dump(exclude={"project"}) | {"updated_at": utcnow()}
        with self.engine.begin() as c:
            changed = c.execute(update(t.review_settings)
                                .where(t.review_settings.c.project == settings.project)
                                .values(**values)).rowcount
            if not changed:
                c.execute(insert(t.review_settings).values(project=settings.project, **values))
        return self.review_settings(settings.project)

    @guard
    def all_review_settings(self) -> list[ReviewSettings]:
        with self.engine.connect() as c:
            return [to_model(ReviewSettings, row) for row in
                    c.execute(select(t.review_settings).order_by(t.review_settings.c.project))]
