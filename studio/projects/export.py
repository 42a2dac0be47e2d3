"""Export a run's candidates and trials (JSONL: one file; CSV: one file each)."""

from __future__ import annotations

import csv
import json
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
    if fmt == "jsonl":
        path = base if base.suffix == ".jsonl" else base.with_suffix(".jsonl")
        with path.open("w", encoding="utf-8") as handle:
            for kind, rows in (("candidate", candidates), ("trial", trials)):
                for row in rows:
                    handle.write(redact(json.dumps({"type": kind, **row}, ensure_ascii=False))
                                 + "\n")
        return [path]
    stem = base.with_suffix("") if base.suffix else base
    paths = [Path(f"{stem}_candidates.csv"), Path(f"{stem}_trials.csv")]
    for path, rows in zip(paths, (candidates, trials), strict=True):
        _write_csv(path, rows)
    return paths


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns or ["empty"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: redact(json.dumps(v) if isinstance(v, list | dict) else
                                       "" if v is None else str(v)) for k, v in row.items()})
