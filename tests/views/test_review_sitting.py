"""The annotation queue's sitting: Previous and Next through the trials shown, back to the
queue's next trial; and "n of N done" with the time spent."""

from __future__ import annotations

import math
from dataclasses import dataclass

from studio.views.review_queue import Sitting, review_progress


@dataclass
class Review:
    trial_id: int
    seconds: float
    action: str


def test_previous_and_next_walk_the_sitting_and_return_to_the_queue():
    sitting = Sitting([])
    assert not sitting.can_go_back(1)
    for shown in (1, 2, 3):  # three trials shown at the queue's head, one after the other
        sitting.note(shown)
    assert sitting.current() is None and sitting.can_go_back(3)
    sitting.back(3)
    assert sitting.current() == 2
    sitting.back(3)
    assert sitting.current() == 1 and not sitting.can_go_back(3)
    sitting.back(3)  # the first stays the first
    assert sitting.current() == 1
    sitting.forward()
    assert sitting.current() == 2
    sitting.forward()  # the newest shown is the queue's head again
    assert sitting.current() is None
    sitting.forward()
    assert sitting.current() is None


def test_going_back_from_a_new_head_reaches_the_last_reviewed():
    sitting = Sitting([])
    sitting.note(1)
    sitting.note(2)  # 1 was saved; 2 is the head and has not been noted again
    sitting.back(5)  # the head moved on to 5 (2 was corrected elsewhere), not yet shown
    assert sitting.current() == 2
    sitting.note(2)  # a trial shown again is kept once, newest last
    assert sitting.shown == [1, 2]


def test_progress_counts_each_done_trial_once_and_the_time_spent():
    reviews = [Review(1, 10.0, "corrected"), Review(1, 5.0, "corrected"),
               Review(2, 20.0, "confirmed"), Review(3, 4.0, "skipped"),
               Review(4, math.nan, "corrected")]
    progress = review_progress(6, reviews, corrected_ids=[9, 1])
    assert (progress.done, progress.total, progress.seconds) == (4, 10, 39.0)
    assert progress.text() == "4 of 10 done · 39 s spent"
    assert review_progress(0, []).text() == "0 of 0 done · 0 s spent"
