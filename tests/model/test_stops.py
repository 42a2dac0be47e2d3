"""A stop condition is one object (studio.model.stops): its setting, check, reason, words and
form input; the reason's words and limit field are read from it, never from a second table."""

from __future__ import annotations

import pytest

from studio.model.config import EvolutionConfig
from studio.model.records import StopReason
from studio.model.stops import STOP_CONDITIONS, FormInput, stop_condition


def test_every_limit_reason_is_one_condition_owning_its_setting_and_words():
    for reason in StopReason:  # the named reasons: a limit's is a condition's
        assert reason.is_limit is (stop_condition(reason.value) is not None)
    for condition in STOP_CONDITIONS:  # a condition's reason needs no member of its own
        reason = StopReason(condition.reason)
        assert reason.is_limit and condition.setting in EvolutionConfig.model_fields
        assert (reason.limit_field, reason.words) == (condition.setting, condition.words)
    order = [c.reason for c in STOP_CONDITIONS]
    known = ["timeout", "max_iterations", "score_threshold", "patience", "out_of_ideas",
             "max_metric_calls"]  # the order the loop checks them in
    assert [r for r in order if r in known] == known
    assert stop_condition("user") is None and not StopReason.USER.is_limit


@pytest.mark.parametrize(("form", "setting", "shown"), [
    (FormInput("minutes", 0.0, 10.0, step=1.0, scale=60), 90.0, 1.5),
    (FormInput("count", 0, 10), None, 0),
    (FormInput("required count", 0, 10, required=True), 0, 0),
])
def test_a_form_input_shows_its_setting_and_reads_it_back(form, setting, shown):
    assert form.shown(setting) == shown
    assert form.setting(shown) == setting
