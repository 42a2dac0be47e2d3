"""A team's review, as people read it: users, agreement between people, disagreements and
each reviewer's progress, in lines for the terminal and tables for the pages. No Streamlit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from studio.critics.agreement import AgreementSummary
from studio.critics.interrater import PeopleAgreement
from studio.model.redaction import redact
from studio.model.team import User
from studio.projects.team_review import PeopleDisagreement, PeopleSummary, ReviewerProgress
from studio.views.tables import format_duration, format_score, one_line

NOT_AVAILABLE = "n/a"


def user_lines(users: Sequence[User]) -> list[str]:
    if not users:
        return ["no users: this store is the local, single-user studio (every action allowed); "
                "add the first owner with `studio users add NAME --role owner`"]
    return [f"{u.name:<40} {u.role.value:<9} {'token' if u.has_token else '-'}" for u in users]


def alpha_text(value: float | None) -> str:
    return format_score(value, missing=NOT_AVAILABLE)


def people_line(name: str, people: PeopleAgreement) -> str:
    """One scope's agreement between people, in a sentence."""
    kappa = f", Cohen's kappa {alpha_text(people.kappa)} at {people.threshold:g}" \
        if len(people.reviewers) == 2 else ""
    return (f"{name}: Krippendorff's alpha {alpha_text(people.alpha)} on {people.units} "
            f"trial(s) labelled by two or more of {len(people.reviewers)} reviewer(s)"
            f"{kappa}")


def agreement_lines(judge: AgreementSummary, people: PeopleSummary) -> list[str]:
    overall = judge.overall
    lines = [f"judge vs people: {overall.count} trial(s), mean absolute error "
             f"{format_score(overall.mae, missing=NOT_AVAILABLE)}, Cohen's kappa "
             f"{format_score(overall.kappa, missing=NOT_AVAILABLE)} at {judge.threshold:g}",
             people_line("people vs people", people.overall)]
    lines += [people_line(f"  project {one_line(name)}", found)
              for name, found in people.per_project.items()]
    lines += [f"  dimension {one_line(name)}: alpha {alpha_text(d.alpha)} on {d.units} trial(s)"
              for name, d in people.overall.per_dimension.items()]
    return lines


def disagreement_lines(found: Iterable[PeopleDisagreement]) -> list[str]:
    lines = []
    for d in found:
        labels = ", ".join(f"{one_line(x.reviewer)} {format_score(x.score)}" for x in d.labels)
        state = (f"settled at {format_score(d.ruling)} by {one_line(d.ruled_by or '')}"
                 if d.settled else f"open: the loop reads their consensus "
                                   f"{format_score(d.consensus)}")
        lines.append(redact(f"trial {d.trial_id}: {labels} (spread {d.spread:.2f}); {state}"))
    return lines or ["no disagreement between reviewers"]


def people_frame(people: PeopleSummary) -> pd.DataFrame:
    """One row per scope: overall, then each project."""
    rows = [_people_row("all", people.overall)]
    rows += [_people_row(name, found) for name, found in people.per_project.items()]
    return pd.DataFrame(rows)


def _people_row(scope: str, found: PeopleAgreement) -> dict:
    return {"scope": one_line(scope), "reviewers": len(found.reviewers), "labels": found.labels,
            "trials labelled by 2+": found.units, "Krippendorff's alpha": found.alpha,
            "Cohen's kappa (two people)": found.kappa}


def dimension_frame(people: PeopleAgreement) -> pd.DataFrame:
    return pd.DataFrame([{"dimension": one_line(name), "Krippendorff's alpha": d.alpha,
                          "trials labelled by 2+": d.units}
                         for name, d in people.per_dimension.items()])


def progress_frame(progress: Sequence[ReviewerProgress]) -> pd.DataFrame:
    return pd.DataFrame([{"reviewer": one_line(p.name), "labelled": len(p.labelled),
                          "skipped": p.skipped, "time": format_duration(p.seconds),
                          "per trial": "-" if p.mean_seconds is None
                          else f"{p.mean_seconds:.0f} s"} for p in progress])


def disagreement_label(d: PeopleDisagreement, number: int | None = None) -> str:
    """A disagreement in one line, for a picker."""
    labels = ", ".join(f"{one_line(x.reviewer)} {format_score(x.score)}" for x in d.labels)
    name = f"trial {number if number is not None else d.trial_id}"
    state = f" · settled {format_score(d.ruling)}" if d.settled else ""
    return redact(f"{name}: {labels}{state}")
