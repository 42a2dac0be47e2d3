"""Projects: a name and the YAML of its project file."""

from __future__ import annotations

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

import studio.store.schema as t
from studio.model.errors import ConfigError, NotFoundError
from studio.model.records import Project, utcnow
from studio.store.repos.base import Repository, guard, inserted_id, to_model


class ProjectRepository(Repository):
    """Projects: a name and the YAML of its project file."""

    @guard
    def save_project(self, name: str, yaml_text: str, project_id: int | None = None) -> Project:
        """Create a project, or replace the YAML of ``project_id``."""
        if not name.strip():
            raise ConfigError("a project needs a name", where="project.name")
        now = utcnow()
        try:
            with self.engine.begin() as c:
                if project_id is None:
                    project_id = inserted_id(c.execute(insert(t.projects).values(
                        name=name, yaml=yaml_text, created_at=now, updated_at=now)
                    ))
                else:
                    c.execute(update(t.projects).where(t.projects.c.id == project_id)
                              .values(name=name, yaml=yaml_text, updated_at=now))
        except IntegrityError as exc:
            raise ConfigError(f"a project named {name!r} already exists; choose another name",
                              where="project.name", value=name) from exc
        return self.get_project(project_id)

    @guard
    def get_project(self, project_id: int) -> Project:
        with self.engine.connect() as c:
            row = c.execute(select(t.projects).where(t.projects.c.id == project_id)).first()
        if row is None:
            raise NotFoundError(f"project {project_id} does not exist")
        return to_model(Project, row)

    @guard
    def find_project(self, name: str) -> Project | None:
        with self.engine.connect() as c:
            row = c.execute(select(t.projects).where(t.projects.c.name == name)).first()
        return to_model(Project, row)

    @guard
    def list_projects(self) -> list[Project]:
        with self.engine.connect() as c:
            rows = c.execute(select(t.projects).order_by(t.projects.c.updated_at.desc()))
            return [to_model(Project, r) for r in rows]

    @guard
    def delete_project(self, project_id: int) -> None:
        with self.engine.begin() as c:
            c.execute(delete(t.projects).where(t.projects.c.id == project_id))

