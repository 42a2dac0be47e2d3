"""``patience``: iterations in a row without a better best validation mean."""

from studio.model.stops import FormInput, RunProgress, StopCondition


class Patience(StopCondition):
    reason = "patience"
    setting = "patience"
    words = "no gain for too many iterations"
    order = 40
    form = FormInput("Stop after N iterations without gain (0: never)", 0, 10_000)

    def reached(self, limit: int, progress: RunProgress) -> bool:
        return progress.stale_iterations >= limit
