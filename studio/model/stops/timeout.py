"""``timeout_seconds``: the run's machine time, pauses and gates left out."""

from studio.model.stops import FormInput, RunProgress, StopCondition


class Timeout(StopCondition):
    reason = "timeout"
    setting = "timeout_seconds"
    words = "ran out of time"
    order = 10
    form = FormInput("Time limit, minutes (0: none)", 0.0, 10_000.0, step=1.0, key="timeout",
                     scale=60)

    def reached(self, limit: float, progress: RunProgress) -> bool:
        return progress.timed_seconds() >= limit
