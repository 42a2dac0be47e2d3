"""The ``scripted/strict`` world: a critic too strict on short answers, for critic alignment.

The writer answers a one-word topic in one word and any other topic in a full sentence. The
critic gives a short answer 0.2 ("too short") unless its instruction says
:data:`FIX_PHRASE`; a full sentence gets 0.85. The judges see it the same way, each on its own
scale: ``AgentAsJudgeEval`` 1-10 (3 / 9 / 9) or pass/fail, a rubric node its first option (fair)
or last (too short). A person who finds short answers fine corrects
those 0.2s upward, and the reflection adds :data:`FIX_PHRASE` when the trials it reads show the
critic was too strict (the feedback of :mod:`studio.critics.alignment`). So aligning the critic
on the corrections visibly lowers its error against the person.
"""

from __future__ import annotations

import re
from typing import Any

from studio.runtime.providers._protocol import ChatRequest

FIX_PHRASE = "Short answers can be complete"
STRICT_MARKER = "too strict"
"""What the agreement feedback says when the critic scored below the person."""
REFLECTION_MARKER = "## Component Text to Improve"
SHORT_WORDS = 3
STRICT_SCORE, FAIR_SCORE, LONG_SCORE = 0.2, 0.9, 0.85
_OUTPUT_FENCE = re.compile(r"<output-[0-9a-f]+>\n?(.*?)\n?</output-[0-9a-f]+>", re.S)


def reply(request: ChatRequest) -> str | dict[str, Any]:
    """Dispatch on the role the request plays: reflection, critic or writer."""
    if REFLECTION_MARKER in request.prompt_text:
        return reflect(request.prompt_text)
    properties = (request.json_schema or {}).get("properties", {})
    if "score" in properties and properties["score"].get("maximum") == 10:
        return judge_numeric(request.system, request.last_user)
    if "score" in properties:
        return critique(request.system, request.last_user)
    if "passed" in properties or "pass" in properties:
        key = "passed" if "passed" in properties else "pass"
        return {key: critique(request.system, request.last_user)["score"] >= 0.5,
                "reason": "judged", "reasoning": "judged"}
    if "choice" in properties:
        return judge_choice(properties["choice"].get("enum") or ["yes", "no"], request.system,
                            request.last_user)
    return answer(request.last_user)


def answer(user_text: str) -> str:
    topic = re.sub(r"^\s*topic\s*:\s*", "", user_text.strip(), flags=re.I) or "nothing"
    if len(topic.split()) == 1:
        return f"{topic.capitalize()}."
    return f"{topic.capitalize()} is explained here in one complete and careful sentence."


def is_short(output: str) -> bool:
    return len(output.split()) <= SHORT_WORDS


def critique(instruction: str, prompt: str) -> dict[str, Any]:
    fenced = _OUTPUT_FENCE.search(prompt)
    output = fenced.group(1) if fenced else prompt
    if not is_short(output):
        return {"score": LONG_SCORE, "feedback": "A complete answer."}
    if FIX_PHRASE.lower() in instruction.lower():
        return {"score": FAIR_SCORE, "feedback": "Short and correct."}
    return {"score": STRICT_SCORE, "feedback": "Too short: a good answer explains itself."}


def reflect(prompt: str) -> str:
    component = prompt.split(REFLECTION_MARKER, 1)[-1].split("## Trials", 1)[0].strip()
    trials = prompt.split("## Trials", 1)[-1]
    if STRICT_MARKER in trials and FIX_PHRASE.lower() not in component.lower():
        return f"{component}\n{FIX_PHRASE}: judge whether the answer is right, not its length."
    return component


def judge_numeric(system: str, prompt: str) -> dict[str, Any]:
    """``AgentAsJudgeEval`` in numeric mode (1-10): the critic's verdict on its scale."""
    verdict = critique(system, prompt)
    return {"score": round(1 + 9 * verdict["score"]), "reason": verdict["feedback"]}


def judge_choice(choices: list[str], system: str, prompt: str) -> dict[str, Any]:
    """A rubric node: the first option (``yes``) unless the critic finds the answer too
    short, then the last (``no``)."""
    fair = critique(system, prompt)["score"] >= 0.5
    return {"choice": choices[0] if fair else choices[-1], "reasoning": "judged"}
