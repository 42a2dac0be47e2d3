"""EvolutionConfig accepts gepa-adk's spellings where they mean the same, refuses the others
with where to say it instead, and stores only the studio's names."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from studio import EvolutionConfig
from studio.model.config import GEPA_ADK_ELSEWHERE
from studio.model.errors import ConfigError, StudioError


def refusal(**kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        EvolutionConfig(**kwargs)
    return info.value


def test_patience_zero_means_no_patience_limit():
    assert EvolutionConfig(patience=0).patience is None
    assert EvolutionConfig(patience=5).patience == 5
    with pytest.raises(ConfigError, match="greater than or equal to 1"):
        EvolutionConfig(patience=-1)


def test_renamed_fields_land_on_the_studios_names():
    config = EvolutionConfig(max_concurrent_evals=8, reflection_minibatch_size=5)
    assert (config.max_concurrency, config.minibatch_size) == (8, 5)


def test_stored_json_holds_only_the_studios_names():
    gepa_style = EvolutionConfig(max_iterations=20, max_concurrent_evals=8, patience=0, seed=None,
                                 acceptance_metric="sum", min_improvement_threshold=0.0,
                                 frontier_type="instance")
    studio_style = EvolutionConfig(max_iterations=20, max_concurrency=8)
    assert gepa_style.model_dump_json() == studio_style.model_dump_json()
    assert set(json.loads(gepa_style.model_dump_json())) == set(EvolutionConfig.model_fields)


def test_the_same_setting_twice_must_agree():
    assert EvolutionConfig(max_concurrent_evals=4, max_concurrency=4).max_concurrency == 4
    error = refusal(max_concurrent_evals=3, max_concurrency=4)
    assert error.where == "EvolutionConfig.max_concurrent_evals"
    assert "give only max_concurrency" in str(error)


@pytest.mark.parametrize("field, value, says", [
    ("min_improvement_threshold", 0.01, "strictly above its parent's, with no margin"),
    ("frontier_type", "objective", "per validation example"),
    ("acceptance_metric", "median", "compares sums"),
    ("reflection_minibatch_size", None, "set minibatch_size"),
])
def test_values_the_studio_cannot_honour_are_refused(field, value, says):
    error = refusal(**{field: value})
    assert error.where == f"EvolutionConfig.{field}" and says in str(error)


def test_gepa_adk_enums_are_read_by_value():
    class FrontierType(str):  # gepa-adk's FrontierType.INSTANCE is a str enum valued "instance"
        value = "instance"

    assert EvolutionConfig(frontier_type=FrontierType("instance")) == EvolutionConfig()


@pytest.mark.parametrize("field", sorted(GEPA_ADK_ELSEWHERE))
def test_fields_without_an_equivalent_say_where_their_intent_goes(field):
    error = refusal(**{field: "anything"})
    assert error.where == f"EvolutionConfig.{field}"
    assert f"gepa-adk's {field} has no EvolutionConfig equivalent: " in str(error)


def test_reflection_model_points_at_evolve():
    assert "evolve(..., reflection_model=...)" in str(refusal(reflection_model="gemini"))


def test_names_foreign_to_both_are_still_refused():
    with pytest.raises(ConfigError, match="max_iteration: Extra inputs are not permitted"):
        EvolutionConfig(max_iteration=3)


def test_a_refused_value_is_gepa_adks_configuration_error_with_pydantics_words():
    """gepa-adk documents ``ConfigurationError`` for ``EvolutionConfig(max_iterations=-1)``."""
    with pytest.raises(ConfigError) as info:
        EvolutionConfig(max_iterations=-1)
    error = info.value
    assert not isinstance(error, ValidationError) and isinstance(error, StudioError)
    assert (error.field, error.value) == ("max_iterations", -1)
    assert "Input should be greater than or equal to 0" in str(error)
    assert error.errors()[0]["loc"] == ("max_iterations",)  # pydantic's detail is kept


def test_a_nested_config_is_still_validated_by_pydantic_with_its_path():
    """Project files and run specs report a bad ``run:`` value with pydantic's location."""
    from pydantic import BaseModel

    class Holder(BaseModel):  # as ProjectFile.run and Run.config hold it
        config: EvolutionConfig

    with pytest.raises(ValidationError) as info:
        Holder.model_validate({"config": {"max_iterations": -1}})
    assert info.value.errors()[0]["loc"] == ("config", "max_iterations")


def test_a_refused_renamed_field_is_named_as_the_caller_spelled_it():
    """gepa-adk's tests expect ``field == "max_concurrent_evals"`` for its own spelling."""
    with pytest.raises(ConfigError) as info:
        EvolutionConfig(max_concurrent_evals=0)
    assert (info.value.field, info.value.value) == ("max_concurrent_evals", 0)
    with pytest.raises(ConfigError) as info:
        EvolutionConfig(max_concurrency=0)
    assert info.value.field == "max_concurrency"
