"""The ``scripted/demo`` world: a deterministic writer, critic and reflector for haiku.

The writer follows only the rules its instruction states; the critic checks four rules; the
reflector adds the rule the critic's feedback names most often (skipping a text its prompt lists
as already tried, and a rule a reviewer's rejection reason names); judged by ADK's
``response_match_score`` instead, the rule whose words the expected responses have and the
outputs lack; judged by other ADK criteria (which name no rule), the next rule its instruction
lacks when a metric failed. So a run starts low and climbs one rule per accepted proposal, which
makes the loop, the gates and the charts easy to see and test.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from studio.model.refusals import Refusal
from studio.runtime.providers._protocol import ChatRequest

# (rule key, phrase that turns it on in an instruction, critic feedback when missing)
RULES: list[tuple[str, str, str]] = [
    ("lines", "three lines", "Write exactly three lines."),
    ("topic", "name the topic", "Name the topic in the poem."),
    ("season", "season word", "Include a season word (spring, summer, autumn or winter)."),
    ("image", "sensory image", "Use one sensory image, such as a sound or a colour."),
]
SEASONS = ("spring", "summer", "autumn", "winter")
SENSORY = ("rustling", "glowing", "humming", "crimson", "whispering")
REFLECTION_MARKER = "## Component Text to Improve"
_OUTPUT_FENCE = re.compile(r"<output-[0-9a-f]+>\n?(.*?)\n?</output-[0-9a-f]+>", re.S)
_INPUT_BLOCK = re.compile(r"## Input\n(.*?)\n\n## ", re.S)


def reply(request: ChatRequest) -> str | dict[str, Any]:
    """Dispatch on the role the request plays."""
    if REFLECTION_MARKER in request.prompt_text:
        return reflect(request.prompt_text)
    schema = request.json_schema or {}
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    if "score" in properties and ("feedback" in properties or "dimension_scores" in properties):
        return critique(request.last_user, properties)
    if request.json_schema is not None or request.json_mode:
        return schema_instance(schema)
    return write(request.system, request.last_user)


def active_rules(instruction: str) -> set[str]:
    text = instruction.lower()
    return {key for key, phrase, _ in RULES if phrase in text}


def _topic(user_text: str) -> str:
    topic = user_text.strip().splitlines()[0] if user_text.strip() else "nothing"
    return re.sub(r"^\s*topic\s*:\s*", "", topic, flags=re.I).strip() or "nothing"


def write(instruction: str, user_text: str) -> str:
    topic = _topic(user_text)
    rules = active_rules(instruction)
    seed = sum(map(ord, topic))
    subject = topic if "topic" in rules else "the quiet world"
    season = SEASONS[seed % 4] if "season" in rules else "some day"
    image = SENSORY[seed % len(SENSORY)] if "image" in rules else "plain"
    lines = [f"{subject} drifts by", f"{image} light on a {season} path", "then all is still"]
    return "\n".join(lines) if "lines" in rules else " ".join(lines)


def _passes(rule: str, output: str, topic: str) -> bool:
    text = output.lower()
    if rule == "lines":
        return len([line for line in output.splitlines() if line.strip()]) == 3
    if rule == "topic":
        return topic.lower() in text
    if rule == "season":
        return any(word in text for word in SEASONS)
    return any(word in text for word in SENSORY)


def critique(prompt: str, properties: Mapping[str, object]) -> dict[str, Any]:
    fenced = _OUTPUT_FENCE.search(prompt)
    output = fenced.group(1) if fenced else prompt
    block = _INPUT_BLOCK.search(prompt)
    topic = _topic(block.group(1) if block else "")
    results = {key: _passes(key, output, topic) for key, _, _ in RULES}
    missing = [hint for key, _, hint in RULES if not results[key]]
    score = round(sum(results.values()) / len(RULES), 4)
    feedback = "All four rules hold." if not missing else "Missing: " + " ".join(missing)
    verdict: dict[str, Any] = {"score": score, "feedback": feedback}
    if "dimension_scores" in properties:
        verdict["dimension_scores"] = {key: float(ok) for key, ok in results.items()}
    if "actionable_guidance" in properties:
        verdict["actionable_guidance"] = missing[0] if missing else ""
    return verdict


def reflect(prompt: str) -> str:
    component = _section(prompt, REFLECTION_MARKER, "## Trials")
    stripped = component.strip()
    if "generation config in YAML" in prompt:
        return "temperature: 0.2\ntop_p: 0.9\nmax_output_tokens: 256\n"
    if "JSON Schema for the agent" in prompt:
        return _described_schema(stripped)
    trials_text = prompt.split("## Trials", 1)[-1]
    wanted = Counter(
        hint for _, phrase, hint in RULES if hint in trials_text and phrase not in stripped.lower()
    ) or _hints_from_missing_words(trials_text, stripped.lower())
    if not wanted and _ADK_FAILURE.search(trials_text):  # ADK's criteria name no rule
        wanted = Counter({hint: 1 for _, phrase, hint in RULES
                          if phrase not in stripped.lower()})  # the next, in order
    rejected = _rejected_hints(trials_text)
    tried = tried_texts(trials_text)
    for hint, _count in wanted.most_common():
        if hint not in rejected:
            phrase = next(p for _, p, h in RULES if h == hint)
            text = f"{stripped}\nRule: {hint[:-1]} ({phrase})."
            if text not in tried:
                return text
    return stripped


_ADK_FAILURE = re.compile(r"\[\w+\] [\d.]+ \(threshold [^)]*\) FAILED")
"""A metric line of ADK's criteria that failed (:mod:`studio.critics.adk_metrics`): the demo
reflector then adds its next rule, as a model would try something."""


_MISSING_WORDS = re.compile(r"words of the expected response missing: ([a-z0-9, ]+)")
"""What ``response_match`` (ADK's ``response_match_score``) says the output lacked."""


def _hints_from_missing_words(trials_text: str, instruction: str) -> Counter[str]:
    """The rules whose words the references have and the outputs lack, when the critic names
    missing words instead of rules (ADK's criteria): a season word, a sensory word, or any
    other word (the topic's). Only rules the instruction does not state yet."""
    wanted: Counter[str] = Counter()
    for match in _MISSING_WORDS.finditer(trials_text):
        words = {w.strip() for w in match.group(1).split(",") if w.strip()}
        found = {"season": bool(words & set(SEASONS)), "image": bool(words & set(SENSORY)),
                 "topic": bool(words - set(SEASONS) - set(SENSORY))}
        wanted.update(hint for key, phrase, hint in RULES
                      if found.get(key) and phrase not in instruction)
    return wanted


_TRIALS_FENCE = re.compile(r"<trials-([0-9a-f]+)>\n(.*?)\n</trials-\1>", re.S)


def tried_texts(trials_text: str) -> set[str]:
    """The texts the prompt's fenced trials list as already tried: the demo reflector would
    repeat a rejected text, as a model does, unless its prompt names it."""
    return {str(r.get("text", "")).strip() for r in tried_records(trials_text)}


def tried_records(trials_text: str) -> list[dict[str, Any]]:
    """The ``already_tried`` records of the prompt's fenced trials."""
    fenced = _TRIALS_FENCE.search(trials_text)
    try:
        records = json.loads(fenced.group(2)) if fenced else []
    except json.JSONDecodeError:
        return []
    return [r["already_tried"] for r in records
            if isinstance(r, dict) and isinstance(r.get("already_tried"), dict)]


def _described_schema(text: str) -> str:
    """The demo's only schema improvement: give it a description (once)."""
    try:
        schema = json.loads(text) if text else {"type": "object", "properties": {}}
    except json.JSONDecodeError:
        return text
    if isinstance(schema, dict) and "description" not in schema:
        schema["description"] = "A haiku and nothing else."
    return json.dumps(schema, indent=2)


def _rejected_hints(trials_text: str) -> set[str]:
    """Hints whose rule a reviewer rejected before: the demo honours the reviewer's reason,
    read from the tried records a reviewer refused (:class:`~studio.model.refusals.Refusal`)."""
    rejected = set()
    for record in tried_records(trials_text):
        if record.get("refusal") != Refusal.REVIEWER:
            continue
        for _, phrase, hint in RULES:
            if phrase in str(record.get("why", "")).lower():
                rejected.add(hint)
    return rejected


def _section(text: str, start: str, end: str) -> str:
    after = text.split(start, 1)[-1]
    return after.split(end, 1)[0]


def schema_instance(schema: object) -> Any:
    """A small value that satisfies ``schema`` (types, enums, bounds, required keys)."""
    if not isinstance(schema, dict):
        return {}
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return schema_instance(schema[key][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: schema_instance(sub) for name, sub in props.items()}
    if kind == "array":
        return [schema_instance(schema.get("items", {}))] if schema.get("minItems") else []
    if kind in ("number", "integer"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 1)
        value = (low + high) / 2
        return int(round(value)) if kind == "integer" else value
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "ok"


# --------------------------------------------------------------------------- pipeline world

PIPELINE_AGENTS = ("outliner", "writer", "polisher")
"""``scripted/pipeline``: the haiku world as outline -> write -> polish. The outliner names the
topic, the writer follows its instruction's rules (as :func:`write`), the polisher copies the
draft its instruction shows after ``Draft:``. Only the writer's instruction changes the output,
so evolving the middle agent is what helps."""
_AGENT_NAME = re.compile(r'internal name is "([^"]+)"')
_OUTLINE = re.compile(r"Outline for (.+?):")


def pipeline_reply(request: ChatRequest) -> str | dict[str, Any]:
    """Dispatch on the role: reflection and critic as in :func:`reply`, else by agent name."""
    schema = request.json_schema or {}
    if REFLECTION_MARKER in request.prompt_text or "score" in schema.get("properties", {}):
        return reply(request)
    name = _AGENT_NAME.search(request.system)
    role = name.group(1) if name else ""
    first_user = next((m["content"] for m in request.messages if m["role"] == "user"), "")
    if role == "outliner":
        return f"Outline for {_topic(first_user)}: a scene, a detail, a closing."
    if role == "polisher":
        draft = request.system.split("Draft:", 1)
        return draft[1].strip().split("\n\nYou are an agent", 1)[0].strip() if len(draft) > 1 \
            else "(no draft to polish)"
    outline = _OUTLINE.search(request.prompt_text)
    return write(request.system, outline.group(1) if outline else first_user)
