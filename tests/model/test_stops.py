"""A stop condition is one object (studio.model.stops): its setting, check, reason, words and
form input; the reason's words and limit field are read from it, never from a second table."""

from __future__ import annotations

import pytest

from studio.model.config import EvolutionConfig
from studio.model.records import StopReason
from studio.model.stops import STOP_CONDITIONS, FormInput, stop_condition


def test_every_limit_reason_is_one_condition_owning_its_setting_and_words():
    limits = [r for r in StopReason if r.is_limit]
    assert {c.reason for c in STOP_CONDITIONS} == {r.value for r in limits}
    for condition in STOP_CONDITIONS:
        reason = StopReason(condition.reason)
        assert condition.setting in EvolutionConfig.model_fields
        assert (reason.limit_field, reason.words) == (condition.setting, condition.words)
    assert [c.reason for c in STOP_CONDITIONS] == [  # the order the loop checks them in
        "timeout", "max_iterations", "score_threshold", "patience", "out_of_ideas",
        "max_metric_calls"]
    assert stop_condition("user") is None and not StopReason.USER.is_limit


@pytest.mark.parametrize(("form", "setting", "shown"), [
    (FormInput("minutes", 0.0, 10.0, step=1.0, scale=60), 90.0, 1.5),
    (FormInput("count", 0, 10), None, 0),
    (FormInput("required count", 0, 10, required=True), 0, 0),
])
def test_a_form_input_shows_its_setting_and_reads_it_back(form, setting, shown):
    assert form.shown(setting) == shown
    assert form.setting(shown) == setting
