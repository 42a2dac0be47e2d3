"""Export a run's candidates, the provenance of its best candidate's sentences, its proposals
(each with its decision, who made it and why, the evidence it was decided on and the evidence
now) and its trials (with their corrections) (JSONL: one file; CSV: one file each), streamed:
trials are read and written a batch at a time, so a 100,000-trial run exports in constant
memory. Proposals and trials carry their number in the run beside their database id. The
studio's Export button (:func:`spooled_download`) and ``studio export`` write the same lines.

Secrets in the environment are redacted; JSON is strict (NaN and infinities become ``null``); CSV
cells that a spreadsheet would run as a formula (starting with ``= + - @``, tab or CR) are
prefixed with a single quote, as OWASP recommends; control characters in CSV cells (terminal
escape sequences, bidi overrides) are written as ``\x1b``-style escapes, and JSONL escapes them
JSON-style (the exact text for a parser). Targets must be regular files in an existing
folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from studio.engine.people.history import proposal_numbers, proposal_rows
from studio.engine.policies.pool import PoolScores, pool_scores
from studio.engine.scoring.holdout import load_holdout, test_means
from studio.model.errors import ConfigError
from studio.model.jsontools import finite_json
from studio.model.printable import json_escaped_controls, printable
from studio.model.records import Split, Trial, stored_id
from studio.model.redaction import redact, secret_values
from studio.projects.provenance import load_provenance
from studio.store.seams import ExportStore

FORMATS = ("jsonl", "csv")


def trial_record(trial: Trial, steps: bool = False, numbers: RunNumbers | None = None
                 ) -> dict[str, object]:
    """One trial's row; ``steps`` adds who said what in a group run's pipeline (from the
    trace: ``[{"author": "writer", "text": ...}, ...]``); ``numbers`` adds the run's own
    numbers (``number``, ``candidate``, ``proposal_number``) beside the database ids."""
    override = trial.override
    numbered = numbers.of_trial(trial) if numbers is not None else {}
    record = {
        "trial_id": trial.id, **numbered, "candidate_id": trial.candidate_id,
        "iteration": trial.iteration, "phase": trial.phase.value, "split": trial.split.value,
        "example_index": trial.example_index, "proposal_id": trial.proposal_id,
        "input": trial.input_text, "output": trial.output, "judge_score": trial.score,
        "judge_feedback": trial.feedback_text, "effective_score": trial.effective_score,
        "effective_feedback": trial.effective_feedback, "overridden": trial.overridden,
        "override_author": override.author if override else None,
        "overridden_at": override.created_at.isoformat() if override else None,
        "corrected_output": override.corrected_output if override else None,
        "error": trial.error, "latency_s": round(trial.latency_s, 4), "tokens": trial.tokens,
        "cost_usd": trial.cost_usd, "created_at": trial.created_at.isoformat(),
    }
    if steps:
        record["steps"] = export_steps(trial.trace)
    return record


def export_steps(trace: dict[str, Any]) -> list[dict[str, object]]:
    """Each agent's replies in the order they came (tool calls are in the trace, not here)."""
    return [{"author": e.get("author"), "text": e.get("text", "")}
            for e in (trace or {}).get("events", []) if e.get("type") == "text"]


def iter_candidate_records(store: ExportStore, run_id: str, scores: PoolScores | None = None
                           ) -> Iterator[dict[str, object]]:
    """One record per candidate with its validation mean, front membership and components
    (from the pool's effective scores, as :func:`studio.engine.hosting.api.load_result` has them);
    candidates are read a batch at a time."""
    scores = scores or pool_scores(store, store.get_run(run_id))
    tested = tested_means(store, run_id)
    costs = store.candidate_costs(run_id)
    for c in store.iter_candidates(run_id):
        yield {
            "candidate_id": c.id, "index": c.index, "parent_ids": c.parent_ids,
            "pooled": c.pooled, "mean_score": scores.means.get(stored_id(c)),
            **({} if tested is None else {"test_mean": tested.get(stored_id(c))}),
            "on_front": c.id in scores.front, "best": c.id == scores.best_id,
            "cost_usd": costs.get(stored_id(c), 0.0),
            **{f"component.{k}": v for k, v in c.components.items()},
        }


def tested_means(store: ExportStore, run_id: str) -> dict[int, float | None] | None:
    """The held-out test set's mean per candidate scored on it (the baseline and the best);
    None for a run without a test set (its export keeps the columns it always had)."""
    test_ids = [stored_id(e) for e in store.examples(run_id, Split.TEST)]
    if not test_ids:
        return None
    scored = {c for c, _ in store.effective_scores(run_id, example_ids=test_ids)}
    return test_means(store, run_id, test_ids, sorted(scored))


def iter_guard_records(store: ExportStore, run_id: str) -> Iterator[dict[str, object]]:
    """The overfitting guard's report (train/val/test means, gains, verdict), for a run with a
    test set."""
    if store.examples(run_id, Split.TEST):
        yield load_holdout(store, run_id).to_dict()


@dataclass
class RunNumbers:
    """What a trial's row needs to speak the run's own numbers: candidate indexes and proposal
    numbers (both small: one per candidate, one per proposal); a trial's own number is its
    place in the run's oldest-first stream, counted by the reader."""

    candidate_index: dict[int, int]
    proposal_number: dict[int, int]
    count: int = 0

    @classmethod
    def of_run(cls, store: ExportStore, run_id: str) -> RunNumbers:
        return cls(store.candidate_indexes(run_id), proposal_numbers(store.proposals(run_id)))

    def of_trial(self, trial: Trial) -> dict[str, object]:
        """The next trial's numbers (trials must come oldest first, every one of the run)."""
        self.count += 1
        proposal = trial.proposal_id
        return {"number": self.count, "candidate": self.candidate_index.get(trial.candidate_id),
                "proposal_number": self.proposal_number.get(proposal) if proposal else None}


def iter_trial_records(store: ExportStore, run_id: str) -> Iterator[dict[str, object]]:
    """Every trial's record, oldest first, read from the store a batch at a time, with its
    number in the run; a group run's records carry their pipeline ``steps`` (so traces are
    read only for group runs)."""
    group = store.get_run(run_id).spec.is_group
    numbers = RunNumbers.of_run(store, run_id)
    for trial in store.iter_trials(run_id, with_trace=group):
        yield trial_record(trial, steps=group, numbers=numbers)


def provenance_records(store: ExportStore, run_id: str, scores: PoolScores | None = None
                       ) -> list[dict[str, object]]:
    """The best candidate's sentences (lines for JSON/YAML components), each with the proposal
    that introduced it (:mod:`studio.projects.provenance`); none before the seed exists."""
    indexes = store.candidate_indexes(run_id)
    if not indexes:
        return []
    best = (scores or pool_scores(store, store.get_run(run_id))).best_id
    index = indexes[best] if best in indexes else min(indexes.values())
    return list(load_provenance(store, run_id, index).rows())


def proposal_records(store: ExportStore, run_id: str) -> list[dict[str, object]]:
    """One flat record per proposal (:meth:`studio.engine.people.history.ProposalRow.flat`): its
    decision, the evidence it was decided on (``at_decision_*``) and the evidence now
    (``now_*``), judged and effective."""
    return [row.flat() for row in proposal_rows(store, run_id)]


def label_records(store: ExportStore, run_id: str) -> Iterator[dict[str, object]]:
    """Every label a verified reviewer gave and every adjudication, undone ones included, oldest
    first: what each person said, beside the trials' effective values (none in the local
    studio, whose corrections are the trials' own)."""
    for o in store.overrides(run_id):
        if o.reviewer is not None or o.adjudicated:
            yield {"trial_id": o.trial_id, "reviewer": o.reviewer, "author": o.author,
                   "adjudicated": o.adjudicated, "score": o.score, "feedback": o.feedback,
                   "dimensions": o.dimensions, "corrected_output": o.corrected_output,
                   "created_at": o.created_at.isoformat(),
                   "undone_at": o.undone_at.isoformat() if o.undone_at else None}


def jsonl_lines(store: ExportStore, run_id: str) -> Iterator[str]:
    """The JSONL export, line by line (redacted, strict JSON): what :func:`export_run` writes,
    for a caller that streams it elsewhere (a download, a socket)."""
    scores = pool_scores(store, store.get_run(run_id))
    for kind, rows in (("candidate", iter_candidate_records(store, run_id, scores)),
                       ("test_guard", iter_guard_records(store, run_id)),
                       ("provenance", provenance_records(store, run_id, scores)),
                       ("proposal", proposal_records(store, run_id)),
                       ("trial", iter_trial_records(store, run_id)),
                       ("label", label_records(store, run_id))):
        for row in rows:
            yield json_escaped_controls(redact(strict_json({"type": kind, **row}))) + "\n"


class Download(StrEnum):
    """What the studio's download buttons give: the whole run as JSONL (what ``studio export``
    writes), or its trials as one CSV for a spreadsheet."""

    JSONL = "jsonl"
    TRIALS_CSV = "trials_csv"

    def file_name(self, run_id: str) -> str:
        return f"run_{run_id}.jsonl" if self is Download.JSONL else f"run_{run_id}_trials.csv"

    @property
    def mime(self) -> str:
        return "application/jsonl" if self is Download.JSONL else "text/csv"


def download_lines(store: ExportStore, run_id: str, what: Download) -> Iterator[str]:
    """The text of a download, line by line: the JSONL export or the trials' CSV, the same
    lines :func:`export_run` writes."""
    store.get_run(run_id)  # NotFoundError before the first line
    if what is Download.JSONL:
        return jsonl_lines(store, run_id)
    return csv_lines(iter_trial_records(store, run_id))


def spooled_download(store: ExportStore, run_id: str, what: Download) -> IO[bytes]:
    """The download in a temporary file, rewound: the lines are streamed into it, so a big run
    is held once (by whoever reads the file), never as a string and then as its bytes. The file
    is deleted when closed."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (the caller reads and closes it)
    try:
        for line in download_lines(store, run_id, what):
            spool.write(line.encode("utf-8"))
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def export_run(store: ExportStore, run_id: str, fmt: str, out: str | Path | None = None
               ) -> list[Path]:
    """Write the run; returns the files written. Secrets in the environment are redacted.

    Rows are read from the store and written a batch at a time, so memory does not grow with
    the number of trials."""
    if fmt not in FORMATS:
        raise ConfigError(f"format {fmt!r} is not one of: {', '.join(FORMATS)}", where="--format")
    store.get_run(run_id)  # NotFoundError with a clear message
    base = Path(out) if out else Path(f"run_{run_id}")
    check_target(base)
    if fmt == "jsonl":
        path = base if base.suffix == ".jsonl" else base.with_suffix(".jsonl")
        check_target(path)
        write_atomically(path, jsonl_lines(store, run_id))
        return [path]
    stem = base.with_suffix("") if base.suffix else base
    paths = [Path(f"{stem}_candidates.csv"), Path(f"{stem}_trials.csv"),
             Path(f"{stem}_provenance.csv"), Path(f"{stem}_proposals.csv")]
    for path in paths:
        check_target(path)
    scores = pool_scores(store, store.get_run(run_id))
    columns: list[str] = []  # every candidate's keys (one column per component), in order
    for row in iter_candidate_records(store, run_id, scores):
        columns += [k for k in row if k not in columns]
    write_atomically(paths[0], csv_lines(iter_candidate_records(store, run_id, scores), columns))
    write_atomically(paths[2], csv_lines(provenance_records(store, run_id, scores)))
    write_atomically(paths[3], csv_lines(proposal_records(store, run_id)))
    del scores, columns  # the pool's scores grow with the pool: not kept while trials stream
    write_atomically(paths[1], csv_lines(iter_trial_records(store, run_id)))
    return paths


def write_atomically(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` to a temporary file beside ``path``, then rename it over ``path``: a
    failed export (a full disk, a folder without write permission) leaves no truncated file and
    keeps the file that was at ``path`` before.

    Raises:
        ConfigError: naming the path and the operating system's reason.
    """
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            handle.writelines(lines)
        os.chmod(temp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(temp, path)
    except OSError as exc:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror or exc}; nothing was "
                          "written there (an earlier file at that path is unchanged): free "
                          "space, fix the folder's permissions or choose another --out",
                          where="--out", value=str(path)) from None


def check_target(path: Path) -> None:
    """An export writes a regular file in an existing folder, never into a device or a folder.

    Raises:
        ConfigError: naming the path and what to do.
    """
    if not path.parent.is_dir():
        raise ConfigError(f"folder {str(path.parent)!r} does not exist: create it or choose "
                          "another --out", where="--out", value=str(path))
    if path.exists() and not path.is_file():
        raise ConfigError(f"{str(path)!r} is not a regular file (a folder or a device): choose "
                          "a file path", where="--out", value=str(path))


def strict_json(value: object) -> str:
    """JSON any parser accepts: NaN and infinities written as ``null``."""
    return json.dumps(finite_json(value), ensure_ascii=False, allow_nan=False)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object, secrets: list[str] | None = None) -> str:
    """A CSV cell: redacted, JSON for lists and dicts, and never a spreadsheet formula
    (``secrets``: :func:`~studio.model.redaction.secret_values`, read once per row by a caller
    writing many cells)."""
    text = strict_json(value) if isinstance(value, list | dict) else "" if value is None else \
        str(value)
    text = printable(redact(text, secrets))  # escape sequences shown, not acted on
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_lines(rows: Iterable[Mapping[str, object]], columns: list[str] | None = None
              ) -> Iterator[str]:
    """CSV text, a row at a time: the header (``columns``, else the first row's keys), then one
    line per row (an export without rows has the header ``empty``)."""
    buffer = io.StringIO()
    writer = None
    for row in rows:
        if writer is None:
            writer = csv.DictWriter(buffer, fieldnames=columns or list(row))
            writer.writeheader()
        secrets = secret_values()  # the environment read once per row, not once per cell
        writer.writerow({k: csv_cell(v, secrets) for k, v in row.items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if writer is None:
        csv.DictWriter(buffer, fieldnames=["empty"]).writeheader()
        yield buffer.getvalue()
