"""How an align run's result reads: agreement before and after, side by side, for the
Agreement page and the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from studio.views.diffing import diff_stats
from studio.views.tables import format_score, one_line

if TYPE_CHECKING:
    from studio.critics.agreement import AgreementReport
    from studio.projects.aligning import AlignReport

METRICS = (("Labels compared", "count"), ("Unusable replies (worst error)", "unusable"),
           ("Skipped (no score)", "skipped"), ("Mean absolute error", "mae"),
           ("Pearson r", "pearson"), ("Cohen's kappa", "kappa"),
           ("Same verdict", "agreement_rate"))
"""(row label, AgreementReport field), lower MAE is better, higher everything else."""
COUNTS = ("count", "unusable", "skipped")


def agreement_rows(before: object, after: object, labels: tuple[str, str] = ("before", "after")
                   ) -> list[dict[str, str]]:
    """One row per statistic: the original critic's value beside the aligned one's."""
    rows = []
    for title, field in METRICS:
        old, new = getattr(before, field), getattr(after, field)
        show = str if field in COUNTS else (lambda v: format_score(v, missing="n/a"))
        rows.append({"statistic": title, labels[0]: show(old), labels[1]: show(new)})
    return rows


def agreement_frame(before: object, after: object, labels: tuple[str, str] = ("before", "after"),
                    recorded: object = None) -> pd.DataFrame:
    """The statistics side by side; ``recorded`` (the scores the person corrected, as
    recorded) adds a reference column."""
    frame = pd.DataFrame(agreement_rows(before, after, labels))
    if recorded is not None:
        frame[RECORDED] = [row[labels[0]] for row in agreement_rows(recorded, recorded, labels)]
    return frame


RECORDED = "recorded scores (reference)"


def align_summary(report: AlignReport) -> str:
    """One sentence: did the aligned critic agree better with the person?"""
    if report.before is None or report.after is None:
        return report.note or "No held-out agreement yet."
    before, after = report.before, report.after
    if report.improved is None:
        return (f"The original and the aligned critic cannot be compared: they were measured "
                f"on different labels (original: {before.count} compared, {before.skipped} "
                f"skipped; aligned: {after.count} compared, {after.skipped} skipped).")
    verdict = "agrees better with the person" if report.improved else "does not agree better"
    return (f"On {after.count} held-out labels the aligned critic (#{report.best_index}) "
            f"{verdict}: mean absolute error {format_score(before.mae)} -> "
            f"{format_score(after.mae)}.{unusable_note(before, after)}")


def unusable_note(before: AgreementReport, after: AgreementReport) -> str:
    """Replies with no usable score, counted as the worst error (empty when there were none)."""
    if not (before.unusable or after.unusable):
        return ""
    return (f" Replies with no usable score, each counted as the worst error: original "
            f"{before.unusable}, aligned {after.unusable}.")


def active_line(report: AlignReport) -> str:
    """How many labels the corrections make now, of those the align run started with."""
    if report.active_labels == report.labels:
        return (f"{report.labels} labels, all active now ({report.held_out} held out)")
    undone = report.labels - report.active_labels
    return (f"{report.active_labels} of {report.labels} labels active now ({undone} "
            f"correction{'s' if undone != 1 else ''} undone since it started); "
            f"{report.active_held_out} of {report.held_out} held out")


def reviewer_lines(report: Any) -> list[str]:  # an AlignReport with before/after measured
    """How far each critic is from each reviewer and from their consensus (the labels it was
    aligned on), as mean absolute errors on the held-out trials."""
    if not report.reviewers:
        return []
    rows = [("the consensus", report.active_held_out, report.before.mae, report.after.mae)]
    rows += [(one_line(r.reviewer), r.labels, r.before, r.after) for r in report.reviewers]
    lines = ["distance from the people (mean absolute error on the held-out trials):",
             f"{'':<30} {'labels':>6} {'before':>8} {'after':>8}"]
    lines += [f"{name:<30} {count:>6} {format_score(before):>8} {format_score(after):>8}"
              for name, count, before, after in rows]
    return lines


def reviewer_frame(report: Any) -> pd.DataFrame:  # an AlignReport with before/after measured
    """:func:`reviewer_lines` as a table for the Agreement page."""
    rows = [{"from": "the consensus", "labels": report.active_held_out,
             "original critic": report.before.mae, "aligned critic": report.after.mae}]
    rows += [{"from": one_line(r.reviewer), "labels": r.labels, "original critic": r.before,
              "aligned critic": r.after} for r in report.reviewers]
    return pd.DataFrame(rows)


def align_lines(report: AlignReport) -> str:
    """The report as a person reads it in a terminal."""
    lines = [f"align run {report.align_run_id} ({report.status}) of run "
             f"{report.source_run_id}'s critic {report.target}: {active_line(report)}",
             align_summary(report)]
    if report.before is not None and report.after is not None:
        lines.append(f"measured by {report.measured_by}")
        lines.append(f"{'':<22} {'before':>8} {'after':>8} {'recorded':>9}")
        recorded = report.recorded or report.before
        for row, ref in zip(agreement_rows(report.before, report.after),
                            agreement_rows(recorded, recorded), strict=True):
            shown = ref["before"] if report.recorded is not None else ""
            lines.append(f"{row['statistic']:<22} {row['before']:>8} {row['after']:>8} "
                         f"{shown:>9}")
        lines.append("(recorded: the scores you corrected, as the critic gave them)")
        lines += reviewer_lines(report)
    stats = diff_stats(report.text_before, report.text_after)
    lines.append(f"{report.target}: unchanged" if stats.unchanged else
                 f"{report.target}: +{stats.words_added} / -{stats.words_removed} words")
    lines += ["--- before", report.text_before, "--- after", report.text_after]
    return "\n".join(lines)
