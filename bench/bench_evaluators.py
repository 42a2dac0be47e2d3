"""Throughput of the deterministic evaluators.

Trajectory match on 10,000 trajectories of 20 steps (target: 5,000 evaluations/s), in the two
shapes that matter most (OpenAI messages with JSON-text arguments, the studio executor's trace),
in every mode; then a few text evaluators.

Run: ``/tmp/venv2/bin/python bench/bench_evaluators.py`` (``--n 2000`` for a quicker run).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

from studio.evaluators import (
    EditDistance,
    ExactMatch,
    JSONSchemaMatch,
    RegexMatch,
    ToolCallAccuracyEvaluator,
    TrajectoryMatchEvaluator,
)

TARGET_PER_S = 5000.0
STEPS = 20
TOOLS = ("search", "lookup", "fetch", "book", "email")


def _calls(rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """20 calls with argument values unique to this trajectory (no parse is ever reused)."""
    return [(TOOLS[rng.randrange(len(TOOLS))],
             {"query": f"q{rng.randrange(10**9)}", "page": i % 3}) for i in range(STEPS)]


def openai_trajectory(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One assistant message per call, arguments as JSON text (as OpenAI returns them)."""
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}]}
        for i, (name, args) in enumerate(calls)]


def studio_trace(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One tool-call event per call, as the studio executor records them."""
    events = [{"author": "agent", "type": "tool_call", "id": f"c{i}", "name": name,
               "args": dict(args)} for i, (name, args) in enumerate(calls)]
    return {"events": events, "tool_calls": [], "state_delta": {}, "usage": {}}


def gold(calls: list[tuple[str, dict[str, Any]]], rng: random.Random | None) -> list[dict]:
    """The reference as a dataset holds it: ``{name, args}`` rows, shuffled when ``rng``."""
    rows = [{"name": name, "args": dict(args)} for name, args in calls]
    if rng is not None:
        rng.shuffle(rows)
    return rows


def throughput(evaluate: Callable[..., Any], pairs: list[tuple[Any, Any]],
               repeats: int = 3) -> float:
    """Evaluations per second, best of ``repeats`` passes (as ``timeit`` does: the fastest pass
    is the one least disturbed by other processes on the machine)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for outputs, reference in pairs:
            evaluate(outputs=outputs, reference_outputs=reference)
        best = min(best, time.perf_counter() - started)
    return len(pairs) / best


def trajectory_rows(n: int) -> list[tuple[str, float]]:
    """Agent trajectories against gold references in a different shape (so every agent
    argument text is parsed); the same calls in order for strict, shuffled otherwise."""
    rng = random.Random(7)
    trajectories = [_calls(rng) for _ in range(n)]
    rows = []
    for shape, make in (("openai", openai_trajectory), ("studio trace", studio_trace)):
        in_order = [(make(calls), gold(calls, None)) for calls in trajectories]
        reordered = [(make(calls), gold(calls, rng)) for calls in trajectories]
        for mode, pairs in (("strict", in_order), ("unordered", reordered),
                            ("superset", reordered)):
            for args_mode in ("exact", "subset"):
                evaluator = TrajectoryMatchEvaluator(mode=mode, tool_args_match_mode=args_mode)
                rows.append((f"trajectory_match {mode:9s} args={args_mode:6s} [{shape}]",
                             throughput(evaluator.evaluate, pairs)))
        accuracy = ToolCallAccuracyEvaluator()
        rows.append((f"tool_call_accuracy                    [{shape}]",
                     throughput(accuracy.evaluate, reordered)))
    return rows


def text_rows(n: int) -> list[tuple[str, float]]:
    rng = random.Random(11)
    words = ["alpha", "beta", "gamma", "delta", "autumn", "leaves", "river", "stone"]
    texts = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(n)]
    pairs = [(t, texts[(i + 1) % n]) for i, t in enumerate(texts)]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}},
              "required": ["answer"]}
    json_pairs = [(json.dumps({"answer": t}), None) for t in texts]
    return [
        ("exact_match", throughput(ExactMatch(case_sensitive=False).evaluate, pairs)),
        ("regex_match", throughput(RegexMatch(r"\bautumn\b").evaluate, pairs)),
        ("edit_distance (~70-char texts)", throughput(EditDistance().evaluate, pairs[: n // 10])),
        ("json_schema_match", throughput(JSONSchemaMatch(schema).evaluate, json_pairs)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="trajectories per measurement")
    n = parser.parse_args().n
    print(f"{n:,} trajectories of {STEPS} steps; target {TARGET_PER_S:,.0f} evaluations/s")
    for label, rate in trajectory_rows(n):
        print(f"  {label:58s} {rate:10,.0f}/s  ({rate / TARGET_PER_S:4.1f}x target)")
    print("text evaluators")
    for label, rate in text_rows(n):
        print(f"  {label:58s} {rate:10,.0f}/s")


if __name__ == "__main__":
    main()
