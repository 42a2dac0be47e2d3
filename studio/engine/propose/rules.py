"""The rules operator: a reflection that needs no model (``reflection.strategy: rules``).

A 135M model cannot read trials and write a better instruction (its proposals are noise), but
the evaluators already say what went wrong. This operator turns each check that failed on the
minibatch into a fixed instruction rule chosen by the evaluator's kind and named by its label,
and shows training examples (input and expected reply) as few-shot pairs. The result is a
proposal like any other: validated, scored on the minibatch, gated, with its reasoning saying
which rules it added and why.

The instruction it writes is the parent's own text, then two blocks it owns and rewrites each
time (``RULES_HEADING``, ``EXAMPLES_HEADING``): rules accumulate up to ``MAX_RULES``, examples
rotate up to ``MAX_EXAMPLES``. Deterministic: the same trials give the same text.

A trial a person corrected is read only through the correction: the judge's per-check verdicts
on it make no rule (the person's score and words do, see ``verdicts`` and ``reviewer_rules``).

Untrusted text: a check's label, training examples' input/expected and a reviewer's corrected
feedback (quoted, as the reviewer's words) enter the instruction, each clipped to one line, with
braces turned into parentheses so nothing becomes an ADK ``{placeholder}``; model output and the
critic's own feedback only reach the reasoning. Like a person's edit at the gate, the proposal
is shown in full before review mode accepts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from studio.evaluators.base import CheckKind
from studio.evaluators.registry import evaluator_kind
from studio.model.records import Example, Split, Trial, example_expected

RULES_HEADING = "Rules (from the checks that failed):"
EXAMPLES_HEADING = "Examples (input -> correct reply):"
MAX_RULES = 6
MAX_EXAMPLES = 3
LABEL_CHARS = 80
EXAMPLE_CHARS = 160
FEEDBACK_CHARS = 200
PASSED = 1.0
"""A check scoring below this on a reply fell short of it."""

RULES_BY_KIND = {
    CheckKind.EXACT: "Reply with exactly the correct answer and nothing else ({label}).",
    CheckKind.ANSWER: "Give the correct answer itself, written as in the examples ({label}).",
    CheckKind.FORMAT: "Reply in exactly the required format, nothing before or after it ({label}).",
    CheckKind.JSON: "Reply with valid JSON only, no prose and no code fence ({label}).",
    CheckKind.TOOL: "Call the tools the task needs, with the arguments it names ({label}).",
    CheckKind.OTHER: "Every reply must pass the check: {label}.",
}
"""The rule a failed check makes, by what its evaluator checks (the evaluator's own
:attr:`~studio.evaluators.base.Evaluator.check_kind`)."""


@dataclass(frozen=True)
class FailedCheck:
    """One check of the critic and how it did on the minibatch."""

    label: str
    evaluator: str
    failed: int
    seen: int
    feedback: str
    """The first failing reply's feedback (for the reasoning only)."""


@dataclass(frozen=True)
class OperatorProposal:
    """What a model-free operator (the rules operator, the demo selector) proposes."""

    text: str
    reasoning: str


@dataclass(frozen=True)
class _Verdict:
    label: str
    evaluator: str
    score: float | None
    feedback: str


def propose_rules(instruction: str, trials: list[Trial],
                  examples: Mapping[int, Example]) -> OperatorProposal | None:
    """The parent's ``instruction`` with rules for the checks that failed in ``trials`` (and
    reviewers' corrections) and few-shot pairs from their training examples; None when every
    reply passed or there is nothing new to add."""
    base, old_rules, old_examples = split_instruction(instruction)
    checks = failed_checks(trials)
    corrections = reviewer_rules(trials)
    if not checks and not corrections:
        return None  # every reply passed: nothing to learn from
    train = training_pairs(trials, examples)
    added = [(rule, why) for rule, why in rules_for(checks, train) + corrections
             if rule not in old_rules]
    rules = (old_rules + [rule for rule, _ in added])[-MAX_RULES:]
    shown = chosen_examples(old_examples, train, trials)
    text = assemble(base, rules, shown)
    if text.strip() == instruction.strip():
        return None
    return OperatorProposal(text=text,
                            reasoning=rules_reasoning(added, shown, old_examples, checks))


# --------------------------------------------------------------------------- reading trials


def failed_checks(trials: Iterable[Trial]) -> list[FailedCheck]:
    """Per check (in the critic's order), how many replies fell short of it."""
    tally: dict[tuple[str, str], list[Any]] = {}
    for trial in trials:
        for verdict in verdicts(trial):
            if verdict.score is None:
                continue  # could not evaluate: says nothing about the reply
            entry = tally.setdefault((verdict.label, verdict.evaluator), [0, 0, ""])
            entry[1] += 1
            if verdict.score < PASSED:
                entry[0] += 1
                entry[2] = entry[2] or verdict.feedback
    return [FailedCheck(label, evaluator, failed, seen, feedback)
            for (label, evaluator), (failed, seen, feedback) in tally.items() if failed]


def verdicts(trial: Trial) -> list[_Verdict]:
    """The trial's checks: each component of a weighted critic, else the critic as one (with
    the effective score and feedback). On a trial a person corrected, the judge's per-check
    verdicts no longer apply: the person is heard over the judge, and their words make a rule
    of their own (:func:`reviewer_rules`)."""
    extra = trial.feedback.extra
    parts = extra.get("components")
    if isinstance(parts, list) and parts:
        if trial.overridden:
            return []
        return [_part_verdict(part) for part in parts if isinstance(part, Mapping)]
    evaluator = str(extra.get("evaluator") or "critic")
    return [_Verdict(evaluator, evaluator, trial.effective_score, trial.effective_feedback)]


def _part_verdict(part: Mapping[str, object]) -> _Verdict:
    metadata = part.get("metadata")
    if not isinstance(metadata, Mapping):
        metadata = {}
    evaluator = str(metadata.get("evaluator") or part.get("name") or "check")
    score = part.get("score")
    return _Verdict(str(part.get("name") or evaluator), evaluator,
                    float(score) if isinstance(score, int | float) else None,
                    str(part.get("feedback") or ""))


def training_pairs(trials: Iterable[Trial], examples: Mapping[int, Example]
                   ) -> list[tuple[int, str, str]]:
    """``(example id, input, expected)`` of the trials on TRAINING examples that have an
    expected reply: validation and test examples never become few-shot pairs."""
    pairs, seen = [], set()
    for trial in trials:
        example = examples.get(trial.example_id)
        if example is None or example.split is not Split.TRAIN or trial.example_id in seen:
            continue
        expected = example_expected(example.data)
        if expected is None or not expected.strip() or not trial.input_text.strip():
            continue
        seen.add(trial.example_id)
        pairs.append((trial.example_id, inert_line(trial.input_text, EXAMPLE_CHARS),
                      inert_line(expected, EXAMPLE_CHARS)))
    return pairs


# --------------------------------------------------------------------------- rules


def rules_for(checks: list[FailedCheck], train: list[tuple[int, str, str]]
              ) -> list[tuple[str, str]]:
    """``(rule, why)`` per failed check, the rule chosen by the evaluator's kind."""
    words = max((len(expected.split()) for _, _, expected in train), default=0)
    return [(rule_text(check, words), why(check)) for check in checks]


def rule_text(check: FailedCheck, expected_words: int) -> str:
    """A short imperative a small model can follow; ``expected_words`` (the longest expected
    training reply) turns a format check into a length the examples show."""
    label = inert_line(check.label, LABEL_CHARS)
    kind = evaluator_kind(check.evaluator)
    if kind is CheckKind.FORMAT and expected_words:
        words = "one word" if expected_words == 1 else f"at most {expected_words} words"
        return f"Reply with only the answer, {words}, no sentence around it ({label})."
    return RULES_BY_KIND[kind].format(label=label)


def why(check: FailedCheck) -> str:
    feedback = inert_line(check.feedback, FEEDBACK_CHARS)
    return (f"check {check.label!r} ({check.evaluator}) failed on {check.failed} of "
            f"{check.seen} replies" + (f", e.g. {feedback!r}" if feedback else ""))


def reviewer_rules(trials: Iterable[Trial]) -> list[tuple[str, str]]:
    """A person's corrected feedback on a reply that fell short is a rule in their words."""
    rules = []
    for trial in trials:
        feedback = trial.override.feedback if trial.override is not None else None
        score = trial.effective_score
        if feedback is None or not feedback.strip() or score is None or score >= PASSED:
            continue
        words = inert_line(feedback, EXAMPLE_CHARS)
        rules.append((f'A reviewer asked (their words, quoted): "{words}"',
                      f"a reviewer corrected a reply to example #{trial.example_index}"))
    return rules


# --------------------------------------------------------------------------- examples


def chosen_examples(old: list[str], train: list[tuple[int, str, str]],
                    trials: list[Trial]) -> list[str]:
    """The pairs to show: the new training pairs (those the parent failed first), then the
    parent's, up to ``MAX_EXAMPLES``."""
    failing = {t.example_id for t in trials
               if t.effective_score is not None and t.effective_score < PASSED}
    ordered = sorted(train, key=lambda pair: pair[0] not in failing)
    new = [example_line(question, answer) for _, question, answer in ordered]
    shown: list[str] = []
    for line in new + old:
        if line not in shown:
            shown.append(line)
    return shown[:MAX_EXAMPLES]


def example_line(question: str, answer: str) -> str:
    return f"{question} -> {answer}"


# --------------------------------------------------------------------------- the text


def split_instruction(text: str) -> tuple[str, list[str], list[str]]:
    """``(the person's text, rules, example lines)``: the blocks this operator wrote before
    are read back so they are rewritten, never appended twice."""
    base_lines: list[str] = []
    rules: list[str] = []
    shown: list[str] = []
    block: list[str] | None = None
    for line in text.strip().splitlines():
        stripped = line.strip()
        if stripped == RULES_HEADING:
            block = rules
        elif stripped == EXAMPLES_HEADING:
            block = shown
        elif block is None:
            base_lines.append(line)
        elif stripped:
            block.append(stripped[2:] if block is rules and stripped.startswith("- ")
                         else stripped)
    return "\n".join(base_lines).strip(), rules, shown


def assemble(base: str, rules: list[str], shown: list[str]) -> str:
    parts = [base] if base else []
    if rules:
        parts.append(RULES_HEADING + "\n" + "\n".join(f"- {rule}" for rule in rules))
    if shown:
        parts.append(EXAMPLES_HEADING + "\n" + "\n".join(shown))
    return "\n\n".join(parts)


def rules_reasoning(added: list[tuple[str, str]], shown: list[str], old_examples: list[str],
              checks: list[FailedCheck]) -> str:
    """What the provenance and the proposal view show as the reflection's reasoning."""
    lines = ["Rules operator (no model): rules from the checks that failed, examples from the "
             "training set."]
    lines += [f"Added rule {rule!r}: {reason}." for rule, reason in added]
    if not added:
        lines.append("No new rule: " + ("every failed check already has its rule."
                                        if checks else "no check failed on the minibatch."))
    new_examples = [line for line in shown if line not in old_examples]
    if new_examples:
        lines.append(f"Showed {len(new_examples)} new training example(s): "
                     + "; ".join(repr(line) for line in new_examples) + ".")
    return "\n".join(lines)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def inert_line(text: str, limit: int) -> str:
    """``text`` as one bounded line that cannot open an ADK placeholder or a new block."""
    flat = _CONTROL.sub(" ", str(text)).replace("{", "(").replace("}", ")")
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
