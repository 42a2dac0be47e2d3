"""The demo selector: proposals for the ``few_shot`` component, made without a model.

Whatever ``reflection.strategy`` says, a ``few_shot`` proposal comes from here: the demos are
training examples the person wrote (input and expected reply), which is what DSPy's labeled
few-shot does; a reflection model writing JSON demos would invent answers, and a small one
cannot write the JSON. Rules:

- only TRAINING examples with an expected reply (validation and test never leak into a prompt);
  text only (an example with an image or video is skipped: its demo would lack the media), each
  field within ``MAX_DEMO_CHARS`` (longer ones are skipped, never cut: a cut reply teaches a
  wrong answer);
- examples outside the current minibatch first, so the child's minibatch score judges the demos
  on questions they do not answer (the minibatch examples fill in only when too few remain);
- a window of ``DEMO_COUNT`` rotating with the iteration, so successive proposals differ; a
  window that gives the parent's demos or an already tried candidate is skipped.

Deterministic: the same iteration, minibatch and examples give the same demos.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from studio.engine.propose.rules import OperatorProposal, inert_line
from studio.model.limits import MAX_DEMO_CHARS
from studio.model.media import without_media
from studio.model.records import (
    Demo,
    Example,
    Split,
    Trial,
    demos_to_text,
    example_expected,
    example_input_text,
    stored_id,
)

DEMO_COUNT = 2
"""Demos per proposal: two moved SmolLM2-135M from 0.33 to 0.85 on the capitals rows."""
SHOWN_CHARS = 80


@dataclass(frozen=True)
class _Candidate:
    example_id: int
    index: int
    demo: Demo


def demo_pool(examples: Mapping[int, Example], input_key: str | None) -> list[_Candidate]:
    """Every training example that can be a demo, in dataset order."""
    pool = []
    for example in sorted(examples.values(), key=lambda e: e.index):
        demo = _as_demo(example, input_key)
        if demo is not None:
            pool.append(_Candidate(stored_id(example), example.index, demo))
    return pool


def _as_demo(example: Example, input_key: str | None) -> Demo | None:
    if example.split is not Split.TRAIN or example.id is None:
        return None
    if without_media(example.data) != example.data:
        return None
    expected = (example_expected(example.data) or "").strip()
    try:
        question = example_input_text(example.data, input_key).strip()
    except ValueError:  # the input column is missing from this row
        return None
    if not expected or not question or max(len(expected), len(question)) > MAX_DEMO_CHARS:
        return None
    return Demo(input=question, output=expected)


def propose_demos(current: list[Demo], trials: Iterable[Trial],
                  examples: Mapping[int, Example], *, input_key: str | None = None,
                  iteration: int = 1, count: int = DEMO_COUNT,
                  tried: Callable[[str], bool] = lambda _text: False) -> OperatorProposal | None:
    """The next demos to try instead of ``current`` (the parent's), or None when no training
    example can be shown or every window is the parent's or ``tried`` (already a candidate)."""
    minibatch = {trial.example_id for trial in trials}
    pool = demo_pool(examples, input_key)
    outside = [c for c in pool if c.example_id not in minibatch]
    inside = [c for c in pool if c.example_id in minibatch]
    if not pool:
        return None
    for shift in range(max(len(outside), 1)):
        chosen = _window(outside, (iteration - 1) * count + shift, count)
        chosen += inside[: count - len(chosen)]
        text = demos_to_text(c.demo for c in chosen)
        if [c.demo for c in chosen] != current and not tried(text):
            return OperatorProposal(text=text, reasoning=_reasoning(chosen, current, minibatch,
                                                                len(outside), shift))
    return None


def _window(items: list[_Candidate], start: int, count: int) -> list[_Candidate]:
    """``count`` items from ``start``, wrapping around (fewer when there are fewer)."""
    if not items:
        return []
    return [items[(start + i) % len(items)] for i in range(min(count, len(items)))]


def _reasoning(chosen: list[_Candidate], current: list[Demo], minibatch: set[int],
               outside: int, shift: int) -> str:
    lines = ["Demo selector (no model): training examples shown to the agent as prior "
             "conversation turns (its input as the user's, its expected reply as the agent's)."]
    for candidate in chosen:
        lines.append(f"Showed training example #{candidate.index}: "
                     f"{inert_line(candidate.demo.input, SHOWN_CHARS)!r} -> "
                     f"{inert_line(candidate.demo.output, SHOWN_CHARS)!r}"
                     + (" (in this minibatch: too few others to choose from)"
                        if candidate.example_id in minibatch else "") + ".")
    lines.append(f"Chosen from {outside} training example(s) outside this minibatch, so its "
                 "scores judge the demos on questions they do not answer; the window rotates "
                 "with the iteration" + (f" (moved {shift} on: nearer windows were the "
                                         "parent's or already tried)" if shift else "") + ".")
    if current:
        lines.append(f"Replaces the parent's {len(current)} demo(s).")
    return "\n".join(lines)
