"""Export a run's candidates and trials (JSONL: one file; CSV: one file each).

Secrets in the environment are redacted; JSON is strict (NaN and infinities become ``null``); CSV
cells that a spreadsheet would run as a formula (starting with ``= + - @``, tab or CR) are
prefixed with a single quote, as OWASP recommends. Targets must be regular files in an existing
folder.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from studio.engine.api import load_result
from studio.model.errors import ConfigError
from studio.model.redaction import redact
from studio.store import Store

FORMATS = ("jsonl", "csv")


def trial_record(trial: Any) -> dict[str, Any]:
    override = trial.override
    return {
        "trial_id": trial.id, "candidate_id": trial.candidate_id, "iteration": trial.iteration,
        "phase": trial.phase.value, "split": trial.split.value,
        "example_index": trial.example_index, "proposal_id": trial.proposal_id,
        "input": trial.input_text, "output": trial.output, "judge_score": trial.score,
        "judge_feedback": trial.feedback_text, "effective_score": trial.effective_score,
        "effective_feedback": trial.effective_feedback, "overridden": trial.overridden,
        "override_author": override.author if override else None,
        "error": trial.error, "latency_s": round(trial.latency_s, 4), "tokens": trial.tokens,
        "created_at": trial.created_at.isoformat(),
    }


def candidate_records(store: Store, run_id: str) -> list[dict[str, Any]]:
    result = load_result(store, run_id)
    return [{
        "candidate_id": c.id, "index": c.index, "parent_ids": c.parent_ids, "pooled": c.pooled,
        "mean_score": c.mean_score, "on_front": c.on_front,
        "best": c.id == result.best_candidate_id, **{f"component.{k}": v
                                                     for k, v in c.components.items()},
    } for c in result.candidates]


def export_run(store: Store, run_id: str, fmt: str, out: str | Path | None = None) -> list[Path]:
    """Write the run; returns the files written. Secrets in the environment are redacted."""
    if fmt not in FORMATS:
        raise ConfigError(f"format {fmt!r} is not one of: {', '.join(FORMATS)}", where="--format")
    store.get_run(run_id)  # NotFoundError with a clear message
    candidates = candidate_records(store, run_id)
    trials = [trial_record(t) for t in store.trials(run_id)]
    base = Path(out) if out else Path(f"run_{run_id}")
    check_target(base)
    if fmt == "jsonl":
        path = base if base.suffix == ".jsonl" else base.with_suffix(".jsonl")
        check_target(path)
        with path.open("w", encoding="utf-8") as handle:
            for kind, rows in (("candidate", candidates), ("trial", trials)):
                for row in rows:
                    handle.write(redact(strict_json({"type": kind, **row})) + "\n")
        return [path]
    stem = base.with_suffix("") if base.suffix else base
    paths = [Path(f"{stem}_candidates.csv"), Path(f"{stem}_trials.csv")]
    for path in paths:
        check_target(path)
    for path, rows in zip(paths, (candidates, trials), strict=True):
        _write_csv(path, rows)
    return paths


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


def strict_json(value: Any) -> str:
    """JSON any parser accepts: NaN and infinities written as ``null``."""
    return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """A CSV cell: redacted, JSON for lists and dicts, and never a spreadsheet formula."""
    text = strict_json(value) if isinstance(value, list | dict) else "" if value is None else \
        str(value)
    text = redact(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns or ["empty"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: csv_cell(v) for k, v in row.items()})
