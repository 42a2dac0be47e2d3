"""The RAG triad, reference-free: context relevance, groundedness, answer relevance.

Inputs convention: the question comes from ``inputs`` (or ``inputs["question"]``), the answer from
``outputs``, and the retrieved context from a ``context=`` keyword (or ``inputs["context"]``); a
list of documents is numbered. Groundedness decomposes the answer into atomic claims and checks
each against the context: score = supported / judged claims, every verdict in
``metadata["claims"]``. A claim whose verdict cannot be read is listed as unjudged and left out
of the ratio (never counted as unsupported).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from studio.evaluators._judge import (
    DATA_NOTE,
    Fence,
    JudgeEvaluator,
    parse_bool,
    reasoning_of,
    task_text,
    unit_score,
)
from studio.evaluators.base import EvaluatorResult, as_text, registered
from studio.model.jsontools import JsonDict, JsonValue

if TYPE_CHECKING:
    from studio.runtime.execution import AgentExecutor

_SCORE_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1},
                   "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
}
_SCORE_ANSWER = '{"score": <number from 0.0 to 1.0>, "reasoning": "<one sentence>"}'
_CLAIMS_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {
        "claims": {"type": "array", "items": {
            "type": "object",
            "properties": {"claim": {"type": "string"}, "supported": {"type": "boolean"}},
            "required": ["claim", "supported"]}},
        "reasoning": {"type": "string"},
    },
    "required": ["claims", "reasoning"],
}


class _RagEvaluator(JudgeEvaluator):
    """Shared argument handling: where the question, answer and context come from."""

    key = "rag"
    _system: ClassVar[str] = ""
    _schema: ClassVar[dict[str, Any]] = _SCORE_SCHEMA

    def __init__(self, config: Mapping[str, JsonValue] | None = None, endpoint: object = None,
                 question_key: str = "question", context_key: str = "context",
                 key: str | None = None, *, model: object = None,
                 executor: AgentExecutor | None = None) -> None:
        super().__init__(config, model=model, executor=executor, endpoint=endpoint)
        self.question_key = question_key
        self.context_key = context_key
        self.key = key or type(self).key
        self._judge = self.judge(name=f"{type(self).key}_judge", system=self._system,
                                 schema=self._schema)

    def _parts(self, outputs: object, inputs: object,
               kwargs: Mapping[str, object]) -> tuple[str, str | None, str]:
        context = kwargs.get("context")
        if context is None and isinstance(inputs, Mapping):
            context = inputs.get(self.context_key)
        return task_text(inputs, self.question_key), as_text(outputs), _context_text(context)

    async def _score(self, user_text: str) -> EvaluatorResult:
        reply = await self._judge.ask(user_text)
        if reply.data is None:
            return reply.failure(self.key)
        score, problem = unit_score(reply.data)
        if score is None:
            return EvaluatorResult.not_evaluated(self.key, problem, error_kind="judge_reply",
                                                 reply=reply.data)
        return EvaluatorResult(key=self.key, score=score, value=score,
                               comment=reasoning_of(reply.data))


def _context_text(context: object) -> str:
    if context is None:
        return ""
    if isinstance(context, list | tuple):
        docs = [as_text(doc) or "" for doc in context]
        return "\n\n".join(f"[{i}] {doc}" for i, doc in enumerate(docs, 1) if doc.strip())
    return as_text(context) or ""


@registered('context_relevance', 'RAG: is the context relevant?')
class ContextRelevanceEvaluator(_RagEvaluator):
    """Is the retrieved context relevant to (and sufficient for) the question?"""

    key = "context_relevance"
    _system = ("Rate how RELEVANT the retrieved context is for answering the question: 1.0 = "
               "fully relevant and sufficient, 0.0 = irrelevant.\n\n"
               f"{DATA_NOTE}\n\nRespond with JSON only: {_SCORE_ANSWER}")

    async def aevaluate(self, *, outputs: object = None, reference_outputs: object = None,
                        inputs: object = None, **kwargs: object) -> EvaluatorResult:
        question, _answer, context = self._parts(outputs, inputs, kwargs)
        if not context:
            return EvaluatorResult.not_evaluated(self.key, "no context provided")
        if not question:
            return EvaluatorResult.not_evaluated(self.key, "no question provided")
        fence = Fence()
        user_text = f"Question:\n{question}\n\nRetrieved context:\n{fence.wrap(context, 'context')}"
        return await self._score(user_text)


@registered('answer_relevance', 'RAG: does the answer address the question?')
class AnswerRelevanceEvaluator(_RagEvaluator):
    """Does the answer address the question (regardless of factual correctness)?"""

    key = "answer_relevance"
    _system = ("Rate how well the ANSWER addresses the question, regardless of factual "
               "correctness: 1.0 = directly and completely answers, 0.0 = off-topic.\n\n"
               f"{DATA_NOTE}\n\nRespond with JSON only: {_SCORE_ANSWER}")

    async def aevaluate(self, *, outputs: object = None, reference_outputs: object = None,
                        inputs: object = None, **kwargs: object) -> EvaluatorResult:
        question, answer, _context = self._parts(outputs, inputs, kwargs)
        if answer is None:
            return EvaluatorResult.not_evaluated(self.key, "no answer to judge (it is None)")
        if not question:
            return EvaluatorResult.not_evaluated(self.key, "no question provided")
        fence = Fence()
        user_text = f"Question:\n{question}\n\nAnswer:\n{fence.wrap(answer, 'output')}"
        return await self._score(user_text)


@registered('groundedness', 'RAG: supported claims / claims')
class GroundednessEvaluator(_RagEvaluator):
    """Faithfulness by claim decomposition: supported claims / judged claims."""

    key = "groundedness"
    _schema = _CLAIMS_SCHEMA
    _system = (
        "Decompose the ANSWER into atomic factual claims, then judge whether each claim is "
        "SUPPORTED by the context (true only if the context entails it).\n\n"
        f"{DATA_NOTE}\n\nRespond with JSON only: "
        '{"claims": [{"claim": "<text>", "supported": <true or false>}], '
        '"reasoning": "<one sentence>"}'
    )

    async def aevaluate(self, *, outputs: object = None, reference_outputs: object = None,
                        inputs: object = None, **kwargs: object) -> EvaluatorResult:
        _question, answer, context = self._parts(outputs, inputs, kwargs)
        if answer is None or not answer.strip():
            return EvaluatorResult.not_evaluated(self.key, "empty answer: no claims to check")
        if not context:
            return EvaluatorResult.not_evaluated(self.key, "no context provided")
        fence = Fence()
        user_text = (f"Context:\n{fence.wrap(context, 'context')}\n\n"
                     f"Answer:\n{fence.wrap(answer, 'output')}")
        reply = await self._judge.ask(user_text)
        if reply.data is None:
            return reply.failure(self.key)
        return self._claims_result(reply.data)

    def _claims_result(self, data: Mapping[str, object]) -> EvaluatorResult:
        raw_claims = data.get("claims")
        claims = [_claim(item) for item in raw_claims] if isinstance(raw_claims, list) else []
        judged = [c for c in claims if c["supported"] is not None]
        if not judged:
            why = "the judge extracted no claims" if not claims else "no claim has a verdict"
            return EvaluatorResult.not_evaluated(self.key, why, error_kind="judge_reply",
                                                 claims=claims)
        supported = sum(1 for c in judged if c["supported"])
        comment = f"{supported} of {len(judged)} claims supported by the context"
        unsupported = [c["claim"] for c in judged if not c["supported"]]
        if unsupported:
            comment += "; unsupported: " + "; ".join(unsupported[:5])
        reasoning = reasoning_of(data)
        return EvaluatorResult(
            key=self.key, score=supported / len(judged),
            value=f"{supported}/{len(judged)} claims supported",
            comment=f"{comment}. {reasoning}".strip() if reasoning else comment,
            metadata={"claims": claims, "supported": supported, "total": len(judged),
                      "unjudged": len(claims) - len(judged)},
        )


def _claim(item: object) -> dict[str, Any]:
    if isinstance(item, Mapping):
        text = item.get("claim") or item.get("text") or ""
        return {"claim": str(text), "supported": parse_bool(item.get("supported"))}
    return {"claim": str(item), "supported": None}


def rag_triad(config: Mapping[str, JsonValue] | None = None, endpoint: object = None, *,
              model: object = None, executor: AgentExecutor | None = None,
              **options: Any) -> dict[str, _RagEvaluator]:
    """The three RAG-triad evaluators sharing one model and executor.

    Returns:
        ``{"context_relevance": ..., "groundedness": ..., "answer_relevance": ...}``.
    """
    shared = {"model": model, "executor": executor, "endpoint": endpoint, **options}
    return {
        "context_relevance": ContextRelevanceEvaluator(config, **shared),
        "groundedness": GroundednessEvaluator(config, **shared),
        "answer_relevance": AnswerRelevanceEvaluator(config, **shared),
    }
