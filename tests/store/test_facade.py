"""The Store facade: every repository method is reachable as ``store.<method>``, with the
repository's own signature and docstring, and all repositories share one database."""

from __future__ import annotations

import inspect

from studio.store import Store
from studio.store.repos import Repository


def repository_attributes(store: Store) -> dict[str, Repository]:
    return {name: value for name, value in vars(store).items()
            if isinstance(value, Repository)}


def public_methods(repository: Repository) -> list[str]:
    return [name for name, value in vars(type(repository)).items()
            if callable(value) and not name.startswith("_")]


def test_every_repository_method_is_forwarded_with_its_signature_and_docstring(store):
    owners: dict[str, str] = {}
    for attribute, repository in repository_attributes(store).items():
        for name in public_methods(repository):
            assert name not in owners, f"{name} is defined by {owners[name]} and {attribute}"
            owners[name] = attribute
            facade, own = getattr(Store, name), getattr(type(repository), name)
            assert inspect.signature(facade) == inspect.signature(own), name
            assert facade.__doc__ == own.__doc__, name
    facade_methods = {name for name in dir(Store)
                      if not name.startswith("_") and callable(getattr(Store, name))}
    assert facade_methods == set(owners) | {"file_intact", "check_file", "close"}


def test_the_repositories_share_the_store_s_database(store):
    repositories = repository_attributes(store)
    assert len(repositories) == 13
    assert {id(repository.db) for repository in repositories.values()} == {id(store.db)}
    assert all(repository.engine is store.engine for repository in repositories.values())


def test_a_call_on_the_facade_is_the_repository_s_call(store):
    project = store.save_project("facade", "name: facade")
    assert store.projects_repo.get_project(project.id) == store.get_project(project.id)
    assert [p.name for p in store.list_projects()] == ["facade"]
