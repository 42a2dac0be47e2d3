"""``max_iterations``: reflection iterations after the baseline."""

from studio.model.stops import FormInput, RunProgress, StopCondition


class MaxIterations(StopCondition):
    reason = "max_iterations"
    setting = "max_iterations"
    words = "reached its iteration limit"
    order = 20
    form = FormInput("Max iterations", 0, 100_000, required=True)

    def reached(self, limit: int, progress: RunProgress) -> bool:
        return progress.iteration >= limit
