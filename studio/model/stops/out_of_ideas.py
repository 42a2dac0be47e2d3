"""``out_of_ideas_after``: reflection iterations in a row that made no new candidate
(counted by :mod:`studio.engine.policies.ideas`, which also announces the calls saved)."""

from studio.model.stops import RunProgress, StopCondition


class OutOfIdeas(StopCondition):
    reason = "out_of_ideas"
    setting = "out_of_ideas_after"
    words = ("the reflection has no new idea after your rejections: try editing, or a "
             "different reflection model")
    order = 50

    def reached(self, limit: int, progress: RunProgress) -> bool:
        return progress.idle_iterations >= limit
