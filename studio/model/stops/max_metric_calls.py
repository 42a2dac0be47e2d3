"""``max_metric_calls``: the budget of critic evaluations. An iteration it cannot pay for whole
(the parent and the child on the minibatch, and the validation set should the child be
accepted) is not started: an accepted child is never left without its validation."""

from studio.model.stops import FormInput, RunProgress, StopCondition


class MaxMetricCalls(StopCondition):
    reason = "max_metric_calls"
    setting = "max_metric_calls"
    words = "used its budget of metric calls"
    order = 60
    form = FormInput("Metric-call budget (0: none)", 0, 10_000_000,
                     help="Critic evaluations (trials) the run may spend.")

    def reached(self, limit: int, progress: RunProgress) -> bool:
        spent = progress.metric_calls()
        return spent >= limit or spent + progress.next_iteration_calls() > limit
