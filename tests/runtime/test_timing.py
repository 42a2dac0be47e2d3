"""The timing settings' reader: a number of seconds from the environment, refused by name when
it is not a finite number in range (0 or negative would let a second process take a live run).
That each setting reaches it, through the CLI, is tests/processes/test_worker_settings.py."""

from __future__ import annotations

import pytest

from studio.model.errors import ConfigError
from studio.runtime.timing import seconds_setting


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-inf", "0", "-1", "1e400", ""])
def test_a_value_that_is_not_seconds_in_range_is_refused_naming_the_variable(monkeypatch,
                                                                             value):
    monkeypatch.setenv("STUDIO_TEST_SECONDS", value or "  ")
    if not value:  # blank is unset: the default
        assert seconds_setting("STUDIO_TEST_SECONDS", 3.0, 0.05, 600.0) == 3.0
        return
    with pytest.raises(ConfigError) as refused:
        seconds_setting("STUDIO_TEST_SECONDS", 3.0, 0.05, 600.0)
    assert refused.value.where == "STUDIO_TEST_SECONDS" and refused.value.value == value
    assert "give a number of seconds from 0.05 to 600 (default 3)" in str(refused.value)


def test_a_value_in_range_is_read_with_its_spaces_trimmed(monkeypatch):
    monkeypatch.setenv("STUDIO_TEST_SECONDS", " 30 ")
    assert seconds_setting("STUDIO_TEST_SECONDS", 3.0, 0.05, 600.0) == 30.0
