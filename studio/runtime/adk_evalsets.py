"""ADK eval sets (``*.evalset.json``) and legacy test files (``*.test.json``) as dataset rows.

An ADK user records cases in ``adk web`` and feeds them to ``adk eval`` / ``adk optimize``; the
studio reads the same files with ADK's own models (``google.adk.evaluation``), so a file ADK
accepts is read the same way here, and a file ADK would refuse is refused with ADK's reason.

One single-turn case becomes one row:

==========================================  ==========================================
ADK                                         row field
==========================================  ==========================================
``conversation[0].user_content`` (text)     ``input``
``conversation[0].final_response`` (text)   ``expected`` (left out when empty)
expected tool uses (``intermediate_data``)  ``expected_trajectory``: ``[{name, args}]``,
                                            what the trajectory evaluators read
``session_input.state``                     one field each (the agent's session state)
``eval_id``, the eval set's ``eval_set_id``  ``eval_id``, ``eval_set_id`` (for the export)
==========================================  ==========================================

A multi-turn case (several invocations in one session) or a user-simulator scenario is refused
with its ``eval_id``: the studio scores one reply per example, and running the later turns alone
would score them without the context ADK gives them. Rubrics and ``final_session_state`` are not
read (ADK's metrics use them; the studio's critics do not).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.model.errors import DatasetError
from studio.model.jsontools import MAX_JSON_DEPTH, json_depth
from studio.model.records import EXPECTED_KEY, INPUT_KEY

if TYPE_CHECKING:
    from google.adk.evaluation.eval_case import EvalCase, Invocation
    from google.adk.evaluation.eval_set import EvalSet
    from google.genai.types import Content
    from pydantic import ValidationError

EVAL_SET_SUFFIXES = (".evalset.json", ".test.json")
TRAJECTORY_KEY = "expected_trajectory"
"""The column the trajectory evaluators read as the reference (``studio.critics.adapters``)."""
EVAL_ID_KEY = "eval_id"
EVAL_SET_ID_KEY = "eval_set_id"
"""Where a row came from, kept so the run's results export back as ADK's eval set result with
the same ids (:mod:`studio.projects.adk_results`)."""
_RESERVED = (INPUT_KEY, EXPECTED_KEY, TRAJECTORY_KEY, EVAL_ID_KEY, EVAL_SET_ID_KEY)


def is_eval_set_file(path: Path | str) -> bool:
    """Whether ``path`` is named as ADK names its eval set and test files."""
    return str(path).lower().endswith(EVAL_SET_SUFFIXES)


def eval_set_rows(text: str, *, source: str, where: str = "dataset") -> list[dict[str, Any]]:
    """The rows of an eval set or legacy test file's ``text`` (``source`` names the file).

    Raises:
        DatasetError: the file is neither format ADK reads (with ADK's validation message), a
            case is multi-turn or has no user text (naming its ``eval_id``), or a session state
            key collides with a row field.
    """
    eval_set = parse_eval_set(text, source=source, where=where)
    rows = [case_row(case, source=source, where=f"{where}[{i}]",
                     eval_set_id=eval_set.eval_set_id)
            for i, case in enumerate(eval_set.eval_cases)]
    if not rows:
        raise DatasetError(f"the eval set {source} has no eval cases", where=where,
                           value=source)
    return rows


def parse_eval_set(text: str, *, source: str, where: str = "dataset") -> EvalSet:
    """ADK's ``EvalSet`` for ``text``: the eval set schema, else the legacy formats converted
    by ADK's own converter (as ``adk eval`` and ``AgentEvaluator`` do). JSON nested deeper
    than :data:`~studio.model.jsontools.MAX_JSON_DEPTH` is refused before it is parsed, as in
    a dataset (a few thousand levels would end the parse in a RecursionError)."""
    from google.adk.evaluation.eval_set import EvalSet  # ADK is heavy: loaded when used
    from google.adk.evaluation.local_eval_sets_manager import (
        convert_eval_set_to_pydantic_schema,
    )
    from pydantic import ValidationError

    if json_depth(text) > MAX_JSON_DEPTH:
        raise DatasetError(f"{source} nests more than {MAX_JSON_DEPTH} levels deep; an ADK eval "
                           "set nests about 8 (cases, turns, parts, tool calls)", where=where,
                           value=source)
    try:
        return EvalSet.model_validate_json(text)
    except ValidationError as exc:
        schema_error = exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{source} is not JSON: {exc}", where=where, value=source) from exc
    eval_set_id = Path(source).name.split(".")[0] or "eval_set"
    legacy = _legacy_cases(data, eval_set_id)
    if legacy is None:
        raise DatasetError(
            f"{source} is neither an ADK eval set nor a legacy test file: "
            f"{_first_error(schema_error)}", where=where, value=source) from schema_error
    try:
        return convert_eval_set_to_pydantic_schema(eval_set_id, legacy)
    except (KeyError, TypeError, ValidationError) as exc:
        raise DatasetError(f"{source}: a legacy test case is malformed ({type(exc).__name__}: "
                           f"{exc})"[:400], where=where, value=source) from exc


def _legacy_cases(data: object, name: str) -> list[dict[str, Any]] | None:
    """The legacy cases ADK's converter takes: ``[{name, data, initial_session}]`` as is, and
    a test file's list of queries as one case (``AgentEvaluator`` runs it as one session)."""
    if not isinstance(data, list) or not data or not all(isinstance(d, dict) for d in data):
        return None
    if all("data" in d for d in data):
        return [{"name": d.get("name", f"{name}_{i}"), **d} for i, d in enumerate(data)]
    if all("query" in d for d in data):
        return [{"name": name, "data": data}]
    return None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    place = ".".join(str(part) for part in error["loc"])
    return f"{place}: {error['msg']}" if place else error["msg"]


def case_row(case: EvalCase, *, source: str, where: str, eval_set_id: str | None = None
             ) -> dict[str, Any]:
    """One single-turn ADK ``EvalCase`` as a row (see the module docstring), with its
    ``eval_id`` and ``eval_set_id``."""
    from google.adk.evaluation.eval_case import get_all_tool_calls

    where = f"{where} ({case.eval_id})"
    invocation = _single_turn(case, source, where)
    text = content_text(invocation.user_content)
    other = [part for part in invocation.user_content.parts or [] if not part.text]
    if other or not text:
        raise DatasetError(f"eval case {case.eval_id!r} in {source}: the user's message has "
                           f"{'no text' if not text else 'a part that is not text'} (images "
                           "and files in eval cases are not read yet, and are never dropped "
                           "silently); give it text parts only, or leave the case out",
                           where=where)
    row: dict[str, Any] = {**_session_state(case, source, where), INPUT_KEY: text,
                           EVAL_ID_KEY: case.eval_id}
    if eval_set_id:
        row[EVAL_SET_ID_KEY] = eval_set_id
    expected = content_text(invocation.final_response)
    if expected:
        row[EXPECTED_KEY] = expected
    if invocation.intermediate_data is not None:
        row[TRAJECTORY_KEY] = [{"name": call.name, "args": dict(call.args or {})}
                               for call in get_all_tool_calls(invocation.intermediate_data)]
    return row


def _single_turn(case: EvalCase, source: str, where: str) -> Invocation:
    """The case's one turn; a conversation scenario or several turns are refused."""
    if case.conversation is None:
        raise DatasetError(
            f"eval case {case.eval_id!r} in {source} is a conversation scenario (ADK's user "
            "simulator writes its turns), which the studio cannot run: one reply is scored per "
            "example. Record the conversation's first turn as a static case in `adk web`, or "
            "leave this case out", where=where)
    turns = len(case.conversation)
    if turns != 1:
        raise DatasetError(
            f"eval case {case.eval_id!r} in {source} has {turns} turns; the studio scores one "
            "reply per example, and a later turn run alone would lack the earlier turns ADK runs "
            "it after. Split the case into single-turn cases if its turns are independent (one "
            "case per user message), or leave it out of the eval set you give the studio",
            where=where, value=turns)
    return case.conversation[0]


def _session_state(case: EvalCase, source: str, where: str) -> dict[str, Any]:
    state = dict(case.session_input.state) if case.session_input is not None else {}
    clash = [key for key in _RESERVED if key in state]
    if clash:
        raise DatasetError(
            f"eval case {case.eval_id!r} in {source}: its session state has the key "
            f"{clash[0]!r}, which is the row's {clash[0]} field here; rename the state key",
            where=where, value=clash[0])
    return state


def content_text(content: Content | None) -> str:
    """The text parts of a ``google.genai`` ``Content``, joined by newlines ("" for None)."""
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text).strip()
