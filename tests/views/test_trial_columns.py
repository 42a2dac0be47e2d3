"""The trials table's columns are one list (studio.views.tables.TRIAL_TABLE): the frame's
columns, values and types, and the Run page's column order and styles all come from it."""

from __future__ import annotations

from components import trial_table
from studio.model.records import Split, Trial, TrialPhase
from studio.views import tables
from studio.views.tables import TRIAL_TABLE, TrialColumn, trial_frame


def _trial() -> Trial:
    return Trial(id=7, run_id="r", candidate_id=2, example_id=1, split=Split.VAL,
                 example_index=4, iteration=3, phase=TrialPhase.CHILD, input_text="in",
                 output="out", score=0.25, feedback={"feedback": "judge"}, latency_s=1.234)


def test_the_frame_and_the_page_read_the_one_column_list():
    frame = trial_frame([_trial()], {2: 1}, {7: 12})
    assert list(frame.columns) == [c.name for c in TRIAL_TABLE]
    row = frame.iloc[0]
    assert (row["number"], row["id"], row["candidate"], row["example"], row["latency_s"]) == \
        (12, 7, 1, "val 4", 1.23)
    assert {c.name: str(frame[c.name].dtype) for c in TRIAL_TABLE if c.dtype} == \
        {c.name: c.dtype for c in TRIAL_TABLE if c.dtype}
    assert [c.name for c in TRIAL_TABLE if c.in_table] == trial_table.TABLE_COLUMNS
    assert [c.name for c in TRIAL_TABLE if c.in_latest] == trial_table.LATEST_COLUMNS
    assert set(trial_table._COLUMNS) == {c.name for c in TRIAL_TABLE if c.styled}


def test_a_new_column_is_one_entry(monkeypatch):
    words = TrialColumn("words", lambda t, f: len(t.output.split()), "int64", "words",
                        "number", "%d", "small")
    monkeypatch.setattr(tables, "TRIAL_TABLE", (*TRIAL_TABLE, words))
    frame = trial_frame([_trial()], {2: 1})
    assert frame.loc[0, "words"] == 1 and str(frame["words"].dtype) == "int64"
    assert trial_table._column(words)["label"] == "words"
