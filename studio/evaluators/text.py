"""Heuristic evaluators of an output's text: matches, distances and JSON structure.

All are deterministic. ``outputs=None`` (the agent produced nothing) gives ``score=None``;
reference-based evaluators also give ``score=None`` when the reference is None. An empty string
is a real value and is compared like any other.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import regex

from studio.evaluators.base import CheckKind, Evaluator, EvaluatorResult, as_text, registered
from studio.model.errors import ConfigError, SchemaError

EmbedFn = Callable[[str], Sequence[float]]
_CODE_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def _missing(key: str, output: str | None) -> EvaluatorResult:
    """Why a text evaluator could not evaluate: no output, else no reference (each None)."""
    if output is None:
        return EvaluatorResult.not_evaluated(key, "no output to evaluate (it is None)")
    return EvaluatorResult.not_evaluated(key, "no reference to compare with (it is None)")


@registered('exact_match', 'Output equals the reference', CheckKind.EXACT)
class ExactMatch(Evaluator):
    """Output equals the reference (after stripping whitespace, optionally ignoring case)."""

    def __init__(self, case_sensitive: bool = True, strip: bool = True,
                 key: str = "exact_match") -> None:
        self.case_sensitive = case_sensitive
        self.strip = strip
        self.key = key

    def _norm(self, text: str) -> str:
        text = text.strip() if self.strip else text
        return text if self.case_sensitive else text.casefold()

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output, reference = as_text(outputs), as_text(reference_outputs)
        if output is None or reference is None:
            return _missing(self.key, output)
        ok = self._norm(output) == self._norm(reference)
        comment = "output equals the reference" if ok else (
            f"output {_clip(output)!r} differs from the reference {_clip(reference)!r}")
        return EvaluatorResult.passed(self.key, ok, comment)


@registered('contains', 'Output contains a substring', CheckKind.ANSWER)
class Contains(Evaluator):
    """Output contains ``substring`` (or, when it is None, the reference text).

    Raises:
        ConfigError: ``substring`` is the empty string (every text contains it).
    """

    def __init__(self, substring: str | None = None, case_sensitive: bool = False,
                 key: str = "contains") -> None:
        if substring == "":
            raise ConfigError("substring is empty; every text contains it — give the text to "
                              "look for, or None to use the reference", where="substring",
                              value=substring)
        self.substring = substring
        self.case_sensitive = case_sensitive
        self.key = key

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output = as_text(outputs)
        needle = self.substring if self.substring is not None else as_text(reference_outputs)
        if output is None or needle is None:
            return _missing(self.key, output)
        if not needle:
            return EvaluatorResult.not_evaluated(self.key, "the reference substring is empty")
        haystack = output if self.case_sensitive else output.casefold()
        found = (needle if self.case_sensitive else needle.casefold()) in haystack
        verb = "contains" if found else "does not contain"
        return EvaluatorResult.passed(self.key, found, f"output {verb} {needle!r}")


@registered('regex_match', 'Output matches a regular expression', CheckKind.FORMAT)
class RegexMatch(Evaluator):
    """Output matches a regular expression (``re.search``, or ``re.fullmatch``).

    Args:
        pattern: the regular expression.
        flags: ``re`` flags as an int, a name (``"IGNORECASE"``) or a list of names.
        full_match: require the whole output to match.

    Raises:
        ConfigError: the pattern does not compile (the message gives the position) or a flag
            name is unknown.
    """

    def __init__(self, pattern: str, flags: int | str | Sequence[str] = 0,
                 full_match: bool = False, key: str = "regex_match") -> None:
        self.pattern = _compile(pattern, _flags(flags))
        self.full_match = full_match
        self.key = key

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output = as_text(outputs)
        if output is None:
            return _missing(self.key, output)
        find = self.pattern.fullmatch if self.full_match else self.pattern.search
        try:
            match = find(output, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return EvaluatorResult.not_evaluated(
                self.key, f"could not evaluate: /{self.pattern.pattern}/ took longer than "
                f"{REGEX_TIMEOUT_S:g} s on a {len(output)}-character output (catastrophic "
                "backtracking?); simplify the pattern, e.g. replace (a+)+ by a+")
        verb = "matches" if match else "does not match"
        return EvaluatorResult.passed(self.key, match is not None,
                                      f"output {verb} /{self.pattern.pattern}/",
                                      match=match.group(0) if match else None)


REGEX_TIMEOUT_S = 1.0
"""A project regex is untrusted: one evaluation may not hold the server longer than this."""


def _compile(pattern: object, flags: int) -> Any:
    """Compiled with the ``regex`` package, whose matching accepts a timeout."""
    if not isinstance(pattern, str):
        raise ConfigError("pattern must be a string", where="pattern", value=pattern)
    try:
        re.compile(pattern, flags)  # the standard library's messages and positions
        return regex.compile(pattern, flags)
    except (re.error, regex.error) as exc:
        position = f" at position {exc.pos}" if getattr(exc, "pos", None) is not None else ""
        raise ConfigError(f"regex {pattern!r} does not compile: {exc.msg}{position}",
                          where="pattern", value=pattern) from exc


def _flags(flags: int | str | Sequence[str]) -> int:
    if isinstance(flags, int):
        return flags
    names = [flags] if isinstance(flags, str) else list(flags)
    value = 0
    for name in names:
        flag = getattr(re.RegexFlag, str(name).upper(), None)
        if not isinstance(flag, re.RegexFlag):
            known = ", ".join(f.name for f in re.RegexFlag if f.name)
            raise ConfigError(f"unknown regex flag {name!r}; known flags: {known}",
                              where="flags", value=name)
        value |= flag
    return value


@registered('edit_distance', '1 - Levenshtein distance / max length', CheckKind.ANSWER)
class EditDistance(Evaluator):
    """Levenshtein similarity: ``score = 1 - distance / max(len(output), len(reference))``.

    Two empty strings are identical (score 1.0). ``value`` is the raw distance.
    """

    def __init__(self, case_sensitive: bool = True, key: str = "edit_distance") -> None:
        self.case_sensitive = case_sensitive
        self.key = key

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output, reference = as_text(outputs), as_text(reference_outputs)
        if output is None or reference is None:
            return _missing(self.key, output)
        if not self.case_sensitive:
            output, reference = output.casefold(), reference.casefold()
        distance = levenshtein(output, reference)
        longest = max(len(output), len(reference))
        score = 1.0 - distance / longest if longest else 1.0
        return EvaluatorResult(
            key=self.key, score=score, value=distance,
            comment=f"edit distance {distance} over max length {longest}",
            metadata={"distance": distance, "max_length": longest},
        )


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions).

    Myers' bit-vector algorithm (Hyyrö's formulation for Levenshtein): one pass over ``a`` with
    the columns of ``b`` packed in a Python integer, far faster than the two-row table.
    """
    if a == b:
        return 0
    if not a or not b:
        return max(len(a), len(b))
    if len(a) < len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for position, char in enumerate(b):
        masks[char] = masks.get(char, 0) | (1 << position)
    full = (1 << len(b)) - 1
    top = 1 << (len(b) - 1)
    plus, minus, distance = full, 0, len(b)
    for char in a:
        match = masks.get(char, 0)
        diagonal = (((match & plus) + plus) ^ plus) | match | minus
        horizontal_plus = minus | (~(diagonal | plus) & full)
        horizontal_minus = plus & diagonal
        if horizontal_plus & top:
            distance += 1
        elif horizontal_minus & top:
            distance -= 1
        horizontal_plus = ((horizontal_plus << 1) | 1) & full
        horizontal_minus = (horizontal_minus << 1) & full
        plus = horizontal_minus | (~(diagonal | horizontal_plus) & full)
        minus = horizontal_plus & diagonal
    return distance


@registered('json_valid', 'Output parses as JSON', CheckKind.JSON)
class JSONValid(Evaluator):
    """Output parses as JSON. Non-string outputs (dicts, lists) count as JSON if serializable.

    Args:
        allow_code_fence: accept JSON wrapped in one Markdown code fence (```json ... ```).
    """

    def __init__(self, allow_code_fence: bool = False, key: str = "json_valid") -> None:
        self.allow_code_fence = allow_code_fence
        self.key = key

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        if outputs is None:
            return EvaluatorResult.not_evaluated(self.key, "no output to evaluate (it is None)")
        parsed = parse_json_output(outputs, allow_code_fence=self.allow_code_fence)
        if isinstance(parsed, _JSONFailure):
            return EvaluatorResult.passed(self.key, False, f"output is not JSON: {parsed.reason}")
        return EvaluatorResult.passed(self.key, True, "output is valid JSON")


class _JSONFailure:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def parse_json_output(outputs: object, *, allow_code_fence: bool = False) -> Any:
    """The JSON value of an output, or a ``_JSONFailure`` saying why it is not JSON."""
    if not isinstance(outputs, str):
        try:
            json.dumps(outputs)
        except (TypeError, ValueError) as exc:
            return _JSONFailure(f"not serializable: {exc}")
        return outputs
    text = outputs
    fenced = _CODE_FENCE.match(text) if allow_code_fence else None
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return _JSONFailure(f"{exc.msg} (line {exc.lineno}, column {exc.colno})")


@registered('json_schema_match', 'Output validates against a JSON Schema', CheckKind.JSON)
class JSONSchemaMatch(Evaluator):
    """Output is JSON that validates against ``schema``.

    Args:
        schema: a JSON Schema (dict or JSON text); checked when the evaluator is built.
        allow_code_fence: accept JSON wrapped in one Markdown code fence.

    Raises:
        SchemaError: the schema is itself invalid (the message names the path and problem).
    """

    def __init__(self, schema: Mapping[str, object] | str, allow_code_fence: bool = False,
                 key: str = "json_schema_match") -> None:
        self.schema = _checked_schema(schema)
        self.allow_code_fence = allow_code_fence
        self.key = key
        self._validator: Any = None

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        if outputs is None:
            return EvaluatorResult.not_evaluated(self.key, "no output to evaluate (it is None)")
        data = parse_json_output(outputs, allow_code_fence=self.allow_code_fence)
        if isinstance(data, _JSONFailure):
            return EvaluatorResult.passed(self.key, False, f"output is not JSON: {data.reason}")
        errors = sorted(self._validator_for().iter_errors(data), key=lambda e: list(e.path))
        if not errors:
            return EvaluatorResult.passed(self.key, True, "output matches the schema")
        problems = [f"{_json_path(e.path)}: {e.message}" for e in errors[:10]]
        return EvaluatorResult.passed(self.key, False,
                                      "output does not match the schema: " + "; ".join(problems),
                                      errors=problems)

    def _validator_for(self) -> Any:
        if self._validator is None:
            import jsonschema

            self._validator = jsonschema.validators.validator_for(self.schema)(self.schema)
        return self._validator


def _checked_schema(schema: object) -> dict[str, Any] | bool:
    """``schema`` (JSON text or parsed) checked as a JSON Schema (``true``/``false`` are ones)."""
    import jsonschema

    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema is not valid JSON: {exc.msg} (line {exc.lineno})",
                              where="schema") from exc
    if not isinstance(schema, dict | bool):
        raise SchemaError("a JSON Schema must be an object", where="schema", value=schema)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"invalid JSON Schema at {_json_path(exc.path)}: {exc.message}",
                          where="schema", value=schema) from exc
    return schema


def _json_path(path: Any) -> str:
    return "/".join(str(p) for p in path) or "(root)"


@registered('embedding_distance', 'Cosine similarity of embeddings', CheckKind.ANSWER)
class EmbeddingDistance(Evaluator):
    """Cosine similarity of output and reference embeddings; ``score = max(0, cosine)``.

    ``embed_fn`` (text -> vector) may be injected, e.g. an embedding API. Otherwise
    ``sentence_transformers`` is imported on first use (never at import time) and the model is
    loaded from the local cache only — nothing is downloaded. If it is not installed, or the model
    is not cached, the result is ``score=None`` with a comment saying what to do.
    """

    def __init__(self, embed_fn: EmbedFn | None = None, model_name: str = "all-MiniLM-L6-v2",
                 key: str = "embedding_distance") -> None:
        self.embed_fn = embed_fn
        self.model_name = model_name
        self.key = key
        self._model: Any = None

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output, reference = as_text(outputs), as_text(reference_outputs)
        if output is None or reference is None:
            return _missing(self.key, output)
        try:
            embed = self._embedder()
            cosine = cosine_similarity(embed(output), embed(reference))
        except _EmbeddingUnavailable as exc:
            return EvaluatorResult.not_evaluated(self.key, str(exc),
                                                 error_kind="embedding_unavailable")
        except Exception as exc:  # an embedding API failure on one example is a result
            return EvaluatorResult.not_evaluated(
                self.key, f"embedding failed: {type(exc).__name__}: {exc}", error_kind="embedding")
        if cosine is None:
            return EvaluatorResult.not_evaluated(self.key, "an embedding is all zeros; "
                                                 "cosine similarity is undefined")
        return EvaluatorResult(key=self.key, score=max(0.0, min(1.0, cosine)), value=cosine,
                               comment=f"cosine similarity {cosine:.3f}",
                               metadata={"cosine": cosine, "distance": 1.0 - cosine})

    def _embedder(self) -> EmbedFn:
        if self.embed_fn is not None:
            return self.embed_fn
        if self._model is None:
            self._model = _load_sentence_transformer(self.model_name)
        return lambda text: self._model.encode(text).tolist()


class _EmbeddingUnavailable(RuntimeError):
    pass


def _load_sentence_transformer(model_name: str) -> Any:
    try:
        from sentence_transformers import SentenceTransformer  # the ML stack: only on demand
    except ImportError as exc:
        raise _EmbeddingUnavailable(
            "EmbeddingDistance needs an embedding function: install sentence-transformers "
            "(pip install sentence-transformers) or pass embed_fn=..."
        ) from exc
    try:
        return SentenceTransformer(model_name, local_files_only=True)
    except Exception as exc:  # model not in the local cache: we never download at run time
        raise _EmbeddingUnavailable(
            f"embedding model {model_name!r} is not available offline ({type(exc).__name__}); "
            f"put it in the local Hugging Face cache or pass embed_fn=..."
        ) from exc


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Cosine of two vectors; None when either is all zeros.

    Raises:
        ValueError: the vectors have different lengths (naming both).
    """
    if len(a) != len(b):
        raise ValueError(f"embeddings differ in length: {len(a)} vs {len(b)}")
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norm == 0:
        return None
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
