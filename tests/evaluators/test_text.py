"""Heuristic text evaluators: the seed's examples, edge cases and bad configuration."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from studio.evaluators import (
    Contains,
    EditDistance,
    EmbeddingDistance,
    ExactMatch,
    JSONSchemaMatch,
    JSONValid,
    RegexMatch,
)
from studio.evaluators.text import cosine_similarity, levenshtein
from studio.model.errors import ConfigError, SchemaError


def test_seed_example_exact_match_case_insensitive():
    result = ExactMatch(case_sensitive=False).evaluate(outputs="HI", reference_outputs="hi")
    assert result.score == 1.0
    assert result.value is True


def test_exact_match_is_case_sensitive_by_default_and_strips():
    assert ExactMatch().evaluate(outputs="HI", reference_outputs="hi").score == 0.0
    assert ExactMatch().evaluate(outputs=" hi\n", reference_outputs="hi").score == 1.0
    assert ExactMatch(strip=False).evaluate(outputs=" hi", reference_outputs="hi").score == 0.0


def test_exact_match_none_and_empty():
    assert ExactMatch().evaluate(outputs=None, reference_outputs="hi").score is None
    no_ref = ExactMatch().evaluate(outputs="hi", reference_outputs=None)
    assert no_ref.score is None
    assert no_ref.comment == "no reference to compare with (it is None)"
    assert ExactMatch().evaluate(outputs="", reference_outputs="").score == 1.0
    assert ExactMatch().evaluate(outputs="x", reference_outputs="").score == 0.0


def test_exact_match_unwraps_common_containers():
    assert ExactMatch().evaluate(outputs={"answer": "Paris"}, reference_outputs="Paris").score == 1


def test_seed_example_contains():
    assert Contains(substring="error").evaluate(outputs="An ERROR occurred").score == 1.0
    result = Contains(substring="error").evaluate(outputs="all good")
    assert result.score == 0.0
    assert result.comment == "output does not contain 'error'"


def test_contains_uses_the_reference_when_no_substring():
    assert Contains().evaluate(outputs="the capital is Paris", reference_outputs="paris").score == 1
    assert Contains(case_sensitive=True).evaluate(outputs="Paris",
                                                  reference_outputs="paris").score == 0
    assert Contains().evaluate(outputs="x", reference_outputs="").score is None
    assert Contains().evaluate(outputs="x", reference_outputs=None).score is None


def test_contains_rejects_an_empty_substring():
    with pytest.raises(ConfigError, match="substring is empty"):
        Contains(substring="")


def test_regex_match_search_fullmatch_and_flags():
    assert RegexMatch(r"\d{3}").evaluate(outputs="call 555 now").score == 1.0
    assert RegexMatch(r"\d{3}", full_match=True).evaluate(outputs="call 555 now").score == 0.0
    result = RegexMatch(r"paris", flags="IGNORECASE").evaluate(outputs="PARIS")
    assert result.score == 1.0
    assert result.metadata["match"] == "PARIS"
    assert RegexMatch("a.b", flags=["dotall"]).evaluate(outputs="a\nb").score == 1.0
    assert RegexMatch("x").evaluate(outputs=None).score is None


def test_regex_that_does_not_compile_says_where():
    with pytest.raises(ConfigError) as info:
        RegexMatch("(unclosed")
    message = str(info.value)
    assert "regex '(unclosed' does not compile: missing ), unterminated subpattern" in message
    assert "at position 0" in message
    assert info.value.value == "(unclosed"


def test_regex_unknown_flag_lists_known_flags():
    with pytest.raises(ConfigError,
                       match="unknown regex flag 'SHOUTING'; known flags: .*IGNORECASE"):
        RegexMatch("x", flags="SHOUTING")


def test_seed_example_edit_distance_formula():
    result = EditDistance().evaluate(outputs="kitten", reference_outputs="sitting")
    assert result.value == 3
    assert result.score == pytest.approx(1 - 3 / 7)
    assert result.comment == "edit distance 3 over max length 7"


def test_edit_distance_edge_cases():
    assert EditDistance().evaluate(outputs="", reference_outputs="").score == 1.0
    assert EditDistance().evaluate(outputs="abc", reference_outputs="").score == 0.0
    assert EditDistance().evaluate(outputs="same", reference_outputs="same").score == 1.0
    assert EditDistance(case_sensitive=False).evaluate(outputs="ABC",
                                                       reference_outputs="abc").score == 1.0
    assert EditDistance().evaluate(outputs=None, reference_outputs="x").score is None


def test_edit_distance_ties_score_the_same():
    # "cat" is one edit from both; equal distances must give equal scores.
    ev = EditDistance()
    first = ev.evaluate(outputs="cat", reference_outputs="bat").score
    second = ev.evaluate(outputs="cat", reference_outputs="cut").score
    assert first == second == pytest.approx(2 / 3)


@pytest.mark.parametrize(("a", "b", "distance"), [
    ("", "abc", 3), ("flaw", "lawn", 2), ("intention", "execution", 5), ("abc", "abc", 0)])
def test_levenshtein(a, b, distance):
    assert levenshtein(a, b) == distance == levenshtein(b, a)


def test_json_valid():
    assert JSONValid().evaluate(outputs='{"a": 1}').score == 1.0
    bad = JSONValid().evaluate(outputs="{a: 1}")
    assert bad.score == 0.0
    assert bad.comment.startswith("output is not JSON: Expecting property name")
    assert JSONValid().evaluate(outputs={"already": "parsed"}).score == 1.0
    assert JSONValid().evaluate(outputs=None).score is None
    fenced = '```json\n{"a": 1}\n```'
    assert JSONValid().evaluate(outputs=fenced).score == 0.0
    assert JSONValid(allow_code_fence=True).evaluate(outputs=fenced).score == 1.0


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer", "minimum": 0}},
          "required": ["name"]}


def test_seed_example_json_schema_match():
    ev = JSONSchemaMatch(SCHEMA)
    assert ev.evaluate(outputs='{"name": "Ada", "age": 36}').score == 1.0
    wrong = ev.evaluate(outputs='{"age": -1}')
    assert wrong.score == 0.0
    assert "'name' is a required property" in wrong.comment
    assert "age: -1 is less than the minimum of 0" in wrong.comment
    assert ev.evaluate(outputs="not json").comment.startswith("output is not JSON")
    assert ev.evaluate(outputs={"name": "Ada"}).score == 1.0
    assert ev.evaluate(outputs=None).score is None


def test_json_schema_that_is_itself_invalid_is_rejected_with_its_path():
    with pytest.raises(SchemaError) as info:
        JSONSchemaMatch({"type": "object", "properties": {"age": {"type": "integr"}}})
    assert "invalid JSON Schema at properties/age/type" in str(info.value)
    assert "'integr' is not valid" in str(info.value)
    with pytest.raises(SchemaError, match="schema is not valid JSON"):
        JSONSchemaMatch("{not json")
    with pytest.raises(SchemaError, match="a JSON Schema must be an object"):
        JSONSchemaMatch(["type", "object"])


def test_json_schema_accepts_json_text_and_non_object_schemas():
    assert JSONSchemaMatch(json.dumps({"type": "array"})).evaluate(outputs="[1, 2]").score == 1.0


def test_embedding_distance_with_injected_embed_fn():
    vectors = {"cat": [1.0, 0.0], "kitten": [0.8, 0.6], "car": [0.0, 1.0], "opposite": [-1.0, 0]}
    ev = EmbeddingDistance(embed_fn=vectors.__getitem__)
    close = ev.evaluate(outputs="kitten", reference_outputs="cat")
    assert close.score == pytest.approx(0.8)
    assert close.metadata["distance"] == pytest.approx(0.2)
    assert ev.evaluate(outputs="car", reference_outputs="cat").score == 0.0
    opposite = ev.evaluate(outputs="opposite", reference_outputs="cat")
    assert opposite.score == 0.0  # clipped to [0, 1]; the raw cosine stays in value
    assert opposite.value == pytest.approx(-1.0)


def test_embedding_distance_degenerate_vectors_and_failures():
    zero = EmbeddingDistance(embed_fn=lambda text: [0.0, 0.0])
    assert "cosine similarity is undefined" in zero.evaluate(
        outputs="a", reference_outputs="b").comment

    def broken(text):
        raise RuntimeError("embedding API down")

    result = EmbeddingDistance(embed_fn=broken).evaluate(outputs="a", reference_outputs="b")
    assert result.score is None
    assert result.comment == "embedding failed: RuntimeError: embedding API down"
    assert cosine_similarity([1, 0], [2, 0]) == 1.0
    with pytest.raises(ValueError, match="embeddings differ in length: 2 vs 3"):
        cosine_similarity([1, 0], [1, 0, 0])


def test_embedding_distance_without_ml_stack_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now fails
    result = EmbeddingDistance().evaluate(outputs="a", reference_outputs="b")
    assert result.score is None
    assert "install sentence-transformers" in result.comment
    assert "pass embed_fn" in result.comment


@pytest.mark.slow
def test_importing_the_library_pulls_no_ml_stack_and_no_model_client():
    code = (
        "import sys, studio.evaluators\n"
        "heavy = ('sentence_transformers', 'torch', 'numpy', 'google.adk', 'litellm', "
        "'llama_cpp', 'jsonschema')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_levenshtein_agrees_with_the_textbook_table_on_random_strings():
    import random

    def textbook(a, b):
        table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)]
                 for i in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1,
                                  table[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
        return table[-1][-1]

    rng = random.Random(3)
    for _ in range(300):
        a = "".join(rng.choice("abc") for _ in range(rng.randrange(8)))
        b = "".join(rng.choice("abc") for _ in range(rng.randrange(8)))
        assert levenshtein(a, b) == textbook(a, b), (a, b)


def test_levenshtein_bit_vector_matches_the_table_algorithm():
    import random

    from studio.evaluators.text import levenshtein

    def table(a: str, b: str) -> int:
        previous = list(range(len(b) + 1))
        for i, char_a in enumerate(a, 1):
            current = [i]
            for j, char_b in enumerate(b, 1):
                current.append(min(previous[j] + 1, current[j - 1] + 1,
                                   previous[j - 1] + (char_a != char_b)))
            previous = current
        return previous[-1]

    rng = random.Random(0)
    for _ in range(2000):
        a = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 25)))
        b = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 25)))
        assert levenshtein(a, b) == table(a, b), (a, b)
    assert (levenshtein("kitten", "sitting"), levenshtein("", "abc")) == (3, 3)
