"""ROUGE-1 response match, the offline counterpart of ADK's ``response_match_score``.

ADK's metric is the ROUGE-1 F-measure (``rouge_score`` with a stemmer) between the agent's final
response and the eval case's; this evaluator computes the same unigram F-measure with ROUGE's
tokenizer (lower case, runs of letters and digits) and no stemmer, so it needs no extra package
and an ADK user's ``response_match_score`` threshold (0.8 by default) reads the same way here.
The comment names the reference words the output missed: what the reflection can act on.
"""

from __future__ import annotations

import re
from collections import Counter

from studio.evaluators.base import Evaluator, EvaluatorResult, as_text, registered

_TOKEN = re.compile(r"[a-z0-9]+")
_SHOWN_MISSING = 12
"""The most missed words named in a comment (the rest are counted)."""


def rouge1_tokens(text: str) -> list[str]:
    """ROUGE's default tokens: lower-cased runs of ASCII letters and digits."""
    return _TOKEN.findall(text.lower())


@registered('response_match', "ROUGE-1 F against the reference (ADK's response_match_score)")
class ResponseMatch(Evaluator):
    """Unigram overlap F-measure between the output and the reference (ROUGE-1 F)."""

    def __init__(self, key: str = "response_match") -> None:
        self.key = key

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output, reference = as_text(outputs), as_text(reference_outputs)
        if output is None or reference is None:
            which = "output" if output is None else "reference"
            return EvaluatorResult.not_evaluated(self.key, f"no {which} to compare (it is None)")
        got, want = Counter(rouge1_tokens(output)), Counter(rouge1_tokens(reference))
        overlap = sum((got & want).values())
        precision = overlap / sum(got.values()) if got else 0.0
        recall = overlap / sum(want.values()) if want else 0.0
        score = 0.0 if overlap == 0 else 2 * precision * recall / (precision + recall)
        if not got and not want:
            score = 1.0
        missing = sorted((want - got).keys())
        return EvaluatorResult(key=self.key, score=score, value=round(score, 4),
                               comment=_comment(score, precision, recall, missing),
                               metadata={"precision": precision, "recall": recall,
                                         "missing_words": missing[:_SHOWN_MISSING]})


def _comment(score: float, precision: float, recall: float, missing: list[str]) -> str:
    text = (f"ROUGE-1 F {score:.2f} against the expected response (precision {precision:.2f}, "
            f"recall {recall:.2f})")
    if missing:
        shown = ", ".join(missing[:_SHOWN_MISSING])
        more = len(missing) - _SHOWN_MISSING
        text += f"; words of the expected response missing: {shown}"
        text += f" (and {more} more)" if more > 0 else ""
    return text
