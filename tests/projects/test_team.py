"""People on a shared store: who is acting (the local studio, a token user, a listed OS user),
what each role may do, users an owner manages, review settings and comments on proposals."""

from __future__ import annotations

import pytest

from studio.model.errors import AccessError, ConfigError
from studio.model.team import Actor, Permission, ReviewSettings, Role
from studio.projects.team import (
    TOKEN_ENV,
    USER_ENV,
    add_user,
    author_for,
    blinded,
    cli_actor,
    comment_on_proposal,
    issue_token,
    os_user,
    proposal_comments,
    remove_user,
    review_settings,
    save_review_settings,
    signed_in_actor,
)
from tests.store.test_sqlite import seed_run

OWNER = Actor("olga@example.com", Role.OWNER, verified=True)
LOCAL = Actor("someone")


@pytest.fixture
def team(store):
    add_user(store, LOCAL, OWNER.name, "owner")
    add_user(store, OWNER, "ana@example.com", "reviewer")
    add_user(store, OWNER, "vic@example.com", "viewer")
    return store


def test_a_store_without_users_is_the_local_studio_where_everything_is_allowed(store):
    actor = cli_actor(store, env={})
    assert actor.local and actor.name == os_user() and actor.reviewer is None
    assert all(actor.can(p) for p in Permission)
    assert cli_actor(store, env={USER_ENV: "ana"}).name == "ana"  # a name, not an identity
    assert author_for(actor, "typed") == "typed"


def test_the_first_user_must_be_an_owner(store):
    with pytest.raises(AccessError, match="first user must be an owner"):
        add_user(store, LOCAL, "ana@example.com", "reviewer")
    assert add_user(store, LOCAL, "olga@example.com", "owner").role is Role.OWNER


def test_a_token_user_acts_with_their_role_and_a_wrong_token_is_refused(team):
    token = issue_token(team, OWNER, "ana@example.com")
    ana = cli_actor(team, env={USER_ENV: "ana@example.com", TOKEN_ENV: token})
    assert (ana.role, ana.verified, ana.reviewer) == (Role.REVIEWER, True, "ana@example.com")
    with pytest.raises(AccessError, match="not theirs"):
        cli_actor(team, env={USER_ENV: "ana@example.com", TOKEN_ENV: token + "x"})
    with pytest.raises(AccessError, match="needs its token"):
        cli_actor(team, env={USER_ENV: "ana@example.com"})
    with pytest.raises(AccessError, match="has no token yet"):
        cli_actor(team, env={USER_ENV: "vic@example.com", TOKEN_ENV: "guess"})
    assert team.get_user("ana@example.com").token_hash != token  # only the hash is kept


def test_an_unlisted_os_user_is_told_how_to_act_on_a_shared_store(team, monkeypatch):
    monkeypatch.setenv("USER", "root")
    with pytest.raises(AccessError, match="OS user 'root' is not one of them.*STUDIO_USER"):
        cli_actor(team, env={})
    add_user(team, OWNER, "root", "owner")
    assert cli_actor(team, env={}) == Actor("root", Role.OWNER, verified=True)


def test_every_refusal_names_the_role_it_needs(team):
    ana = signed_in_actor(team, "ana@example.com")
    with pytest.raises(AccessError) as refused:
        ana.require(Permission.GATE)
    assert str(refused.value).startswith("deciding a proposal needs the owner role: "
                                         "ana@example.com is a reviewer")
    assert (refused.value.needed, refused.value.role) == ("owner", "reviewer")
    viewer = signed_in_actor(team, "vic@example.com")
    assert viewer.can(Permission.READ) and not viewer.can(Permission.LABEL)
    assert signed_in_actor(team, "stranger@example.com") is None
    with pytest.raises(AccessError, match="--author 'bo' is not taken"):
        author_for(ana, "bo")


def test_only_owners_manage_users_and_the_last_owner_stays(team):
    ana = signed_in_actor(team, "ana@example.com")
    with pytest.raises(AccessError, match="managing users and review settings needs the owner"):
        add_user(team, ana, "eve@example.com", "owner")
    with pytest.raises(AccessError, match="last owner"):
        add_user(team, OWNER, OWNER.name, "reviewer")
    with pytest.raises(AccessError, match="last owner"):
        remove_user(team, OWNER, OWNER.name)
    with pytest.raises(ConfigError, match="without spaces"):
        add_user(team, OWNER, "two words", "viewer")
    remove_user(team, OWNER, "vic@example.com")
    assert [u.name for u in team.list_users()] == ["ana@example.com", OWNER.name]
    assert issue_token(team, ana, "ana@example.com")  # one's own token
    with pytest.raises(AccessError):
        issue_token(team, ana, OWNER.name)


def test_review_settings_are_per_project_and_owners_change_them(team):
    run, _, _ = seed_run(team)
    assert review_settings(team, run.id) == ReviewSettings(project="test")
    with pytest.raises(AccessError):
        save_review_settings(team, signed_in_actor(team, "ana@example.com"), "test",
                             reviewers_per_trial=2)
    with pytest.raises(ConfigError, match="from 1 to 20"):
        save_review_settings(team, OWNER, "test", reviewers_per_trial=0)
    saved = save_review_settings(team, OWNER, "test", reviewers_per_trial=3, blind=True)
    assert (saved.reviewers_per_trial, saved.blind, saved.updated_by) == (3, True, OWNER.name)
    assert review_settings(team, run.id).team
    assert blinded(saved, signed_in_actor(team, "ana@example.com")) and not blinded(saved, OWNER)


def test_reviewers_comment_on_proposals_and_viewers_cannot(team):
    from studio.model.records import Proposal

    run, _, candidate = seed_run(team)
    proposal = team.add_proposal(Proposal(run_id=run.id, iteration=1, parent_id=candidate.id,
                                          component="instruction", text="y"))
    ana = signed_in_actor(team, "ana@example.com")
    comment_on_proposal(team, ana, proposal.id, "  the second rule contradicts the first ")
    with pytest.raises(AccessError, match="commenting on a proposal needs the reviewer role"):
        comment_on_proposal(team, signed_in_actor(team, "vic@example.com"), proposal.id, "hi")
    with pytest.raises(ConfigError, match="needs a text"):
        comment_on_proposal(team, ana, proposal.id, "  ")
    found = proposal_comments(team, run.id, proposal.id)
    assert [(c.author, c.text) for c in found] == [
        ("ana@example.com", "the second rule contradicts the first")]
