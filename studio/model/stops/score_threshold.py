"""``score_threshold``: the best validation mean reached the target."""

from studio.model.stops import FormInput, RunProgress, StopCondition


class ScoreThreshold(StopCondition):
    reason = "score_threshold"
    setting = "score_threshold"
    words = "reached the target score"
    order = 30
    form = FormInput("Stop at best score (0: never)", 0.0, 1.0, step=0.05)

    def reached(self, limit: float, progress: RunProgress) -> bool:
        return progress.best_score is not None and progress.best_score >= limit
