"""The `studio` command on a team's store: users and their roles, acting as a token user or the
OS user, every refusal naming the role it needs, labels, adjudication, agreement and
disagreements; `studio ui --host` beyond localhost only with sign-in or --insecure-no-login."""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from studio.store import open_store
from tests.store.test_sqlite import add_trial, seed_run


@pytest.fixture
def team(tmp_path, monkeypatch, capsys):
    """A store whose owner is the OS user (``olga``), with ana (reviewer, token in ``ana``)."""
    db = f"sqlite:///{tmp_path}/team.db"
    store = open_store(db, cached=False)
    run, examples, candidate = seed_run(store)
    trials = [add_trial(store, run, candidate, example, score=0.5) for example in examples]
    monkeypatch.setenv("USER", "olga")
    monkeypatch.delenv("STUDIO_USER", raising=False)
    monkeypatch.delenv("STUDIO_TOKEN", raising=False)
    assert main(["--db", db, "users", "add", "olga", "--role", "owner"]) == 0
    assert main(["--db", db, "users", "add", "ana@example.com"]) == 0
    assert main(["--db", db, "users", "token", "ana@example.com"]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    return db, store, run, trials, token


def as_ana(monkeypatch, token: str) -> None:
    monkeypatch.setenv("STUDIO_USER", "ana@example.com")
    monkeypatch.setenv("STUDIO_TOKEN", token)


def test_every_command_says_which_role_it_needs_or_why_none():
    from studio.cli.commands import COMMANDS, PERMISSIONS
    from studio.model.team import Permission

    no_role = {"worker", "workers", "validate", "schema", "ui", "users"}
    assert set(PERMISSIONS) | no_role == set(COMMANDS) and not set(PERMISSIONS) & no_role
    assert {Permission[name] for name in PERMISSIONS.values()} <= set(Permission)


def test_users_are_listed_with_their_roles(team, capsys):
    db, *_ = team
    assert main(["--db", db, "users"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ana@example.com", "reviewer", "token"]
    assert lines[1].split() == ["olga", "owner", "-"]


def test_a_reviewer_labels_as_themself_and_cannot_gate_or_adjudicate(team, monkeypatch, capsys):
    db, store, run, trials, token = team
    as_ana(monkeypatch, token)
    assert main(["--db", db, "override", str(trials[0].id), "--score", "0.9",
                 "--dimension", "structure=0.8"]) == 0
    label = store.overrides(run.id)[0]
    assert (label.author, label.reviewer, label.dimensions) == (
        "ana@example.com", "ana@example.com", {"structure": 0.8})
    capsys.readouterr()
    for argv, action in ((["decide", "1", "accept"], "deciding a proposal"),
                         (["adjudicate", str(trials[0].id), "--score", "0.1"],
                          "adjudicating a disagreement"),
                         (["users", "add", "eve@example.com"], "managing users"),
                         (["review-settings", "test", "--blind"], "managing users")):
        assert main(["--db", db, *argv]) == 2
        err = capsys.readouterr().err
        assert f"error: {action}" in err and "needs the owner role" in err
        assert "ana@example.com is a reviewer" in err
    assert main(["--db", db, "override", str(trials[0].id), "--score", "0.2",
                 "--author", "bo"]) == 2
    assert "--author 'bo' is not taken" in capsys.readouterr().err
    monkeypatch.setenv("STUDIO_TOKEN", token[:-2])
    assert main(["--db", db, "runs"]) == 2
    assert "not theirs" in capsys.readouterr().err


def test_an_unlisted_os_user_is_refused_a_shared_store(team, monkeypatch, capsys):
    db, *_ = team
    monkeypatch.setenv("USER", "mallory")
    assert main(["--db", db, "trials", "r1"]) == 2
    err = capsys.readouterr().err
    assert "OS user 'mallory' is not one of them" in err and "STUDIO_USER" in err


def test_two_labels_then_an_owner_s_ruling_are_all_kept(team, monkeypatch, capsys, tmp_path):
    db, store, run, trials, token = team
    as_ana(monkeypatch, token)
    assert main(["--db", db, "override", str(trials[0].id), "--score", "0.1"]) == 0
    assert main(["--db", db, "override", str(trials[1].id), "--score", "0.8"]) == 0
    monkeypatch.delenv("STUDIO_USER")
    monkeypatch.delenv("STUDIO_TOKEN")
    assert main(["--db", db, "override", str(trials[0].id), "--score", "0.9"]) == 0  # olga
    assert main(["--db", db, "override", str(trials[1].id), "--score", "0.7"]) == 0
    assert store.get_trial(trials[0].id).effective_score == pytest.approx(0.5)
    capsys.readouterr()
    assert main(["--db", db, "disagreements", "r1"]) == 0
    out = capsys.readouterr().out
    assert f"trial {trials[0].id}: ana@example.com 0.100, olga 0.900" in out
    assert "their consensus 0.500" in out and f"trial {trials[1].id}" not in out
    assert main(["--db", db, "agreement", "r1"]) == 0
    out = capsys.readouterr().out
    assert "people vs people: Krippendorff's alpha" in out and "Cohen's kappa" in out
    assert main(["--db", db, "adjudicate", str(trials[0].id), "--score", "0.3"]) == 0
    assert store.get_trial(trials[0].id).effective_score == 0.3
    capsys.readouterr()
    assert main(["--db", db, "disagreements", "r1"]) == 0
    assert "settled at 0.300 by olga" in capsys.readouterr().out
    out = tmp_path / "run.jsonl"
    assert main(["--db", db, "export", "r1", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    labels = [(x["reviewer"], x["score"], x["adjudicated"]) for x in lines
              if x["type"] == "label" and x["trial_id"] == trials[0].id]
    assert labels == [("ana@example.com", 0.1, False), ("olga", 0.9, False), (None, 0.3, True)]
    trial = next(x for x in lines if x["type"] == "trial" and x["trial_id"] == trials[0].id)
    assert trial["effective_score"] == 0.3 and trial["override_author"] == "olga"


def test_review_settings_are_shown_and_changed_by_an_owner(team, capsys):
    db, *_ = team
    assert main(["--db", db, "review-settings", "test", "--reviewers-per-trial", "2",
                 "--blind"]) == 0
    assert main(["--db", db, "review-settings", "test"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "test: 2 reviewer(s) per trial, blind"


def test_the_local_studio_records_the_os_user_or_the_typed_author(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path}/local.db"
    store = open_store(db, cached=False)
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0])
    monkeypatch.setenv("USER", "kim")
    assert main(["--db", db, "override", str(trial.id), "--score", "0.9"]) == 0
    assert main(["--db", db, "override", str(trial.id), "--score", "0.4", "--author", "x"]) == 0
    assert [(o.author, o.reviewer) for o in store.overrides(run.id)] == [("kim", None),
                                                                         ("x", None)]
    assert store.get_trial(trial.id).effective_score == 0.4  # one local person: the latest


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_ui_beyond_localhost_needs_sign_in_or_says_what_it_exposes(in_folder, capsys):
    assert main(["ui", "--host", "0.0.0.0", "--print-command"]) == 2
    err = capsys.readouterr().err
    assert "sign-in is not configured" in err and "--insecure-no-login" in err
    assert main(["ui", "--host", "0.0.0.0", "--insecure-no-login", "--print-command"]) == 0
    err = capsys.readouterr().err
    assert "WITHOUT SIGN-IN: anyone who reaches this port acts with every role" in err
    assert "spends the API keys" in err
    secrets = in_folder / ".streamlit" / "secrets.toml"
    secrets.parent.mkdir()
    secrets.write_text('[auth]\nredirect_uri = "http://studio.example.com/oauth2callback"\n'
                       'cookie_secret = "a long random secret value"\n'
                       'client_id = "studio"\nclient_secret = "s"\n'
                       'server_metadata_url = "https://id.example.com/.well-known/'
                       'openid-configuration"\n')
    assert main(["ui", "--host", "0.0.0.0", "--print-command"]) == 0
    err = capsys.readouterr().err
    assert "(sign-in required)" in err and "WITHOUT SIGN-IN" not in err


def test_an_incomplete_auth_section_is_no_sign_in(in_folder, capsys):
    secrets = in_folder / ".streamlit" / "secrets.toml"
    secrets.parent.mkdir()
    secrets.write_text('[auth]\nredirect_uri = "http://x/oauth2callback"\n')
    assert main(["ui", "--host", "10.0.0.5", "--print-command"]) == 2
    assert "sign-in is not configured" in capsys.readouterr().err
