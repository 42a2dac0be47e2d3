"""Judge-vs-human agreement: statistics on pairs, and per critic / run / overall from the store."""

from __future__ import annotations

import pytest

from studio.critics.agreement import (
    AgreementReport,
    ConfusionMatrix,
    agreement,
    agreement_from_store,
    cohen_kappa,
    pearson,
)


def test_perfect_agreement():
    report = agreement([(0.9, 0.9), (0.2, 0.2), (0.7, 0.7), (0.1, 0.1)])
    assert report.count == 4
    assert report.mae == 0.0
    assert report.pearson == pytest.approx(1.0)
    assert report.kappa == pytest.approx(1.0)
    assert report.confusion == ConfusionMatrix(tp=2, fp=0, fn=0, tn=2)
    assert report.disagreements == []
    assert report.agreement_rate == 1.0


def test_known_values():
    pairs = [(0.9, 1.0), (0.8, 0.3), (0.2, 0.0), (0.4, 0.6), (0.6, 0.7), (0.1, 0.2)]
    report = agreement(pairs, threshold=0.5)
    assert report.mae == pytest.approx((0.1 + 0.5 + 0.2 + 0.2 + 0.1 + 0.1) / 6)
    # judge passes: 0.9 0.8 0.6; human passes: 1.0 0.6 0.7
    assert report.confusion == ConfusionMatrix(tp=2, fp=1, fn=1, tn=2)
    # po = 4/6; pe = 0.5*0.5 + 0.5*0.5 = 0.5; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert report.kappa == pytest.approx(1 / 3)
    assert report.pearson == pytest.approx(0.709794, abs=1e-6)  # numpy.corrcoef
    assert [(d.judge_score, d.human_score) for d in report.disagreements] == [
        (0.8, 0.3), (0.4, 0.6)]  # largest gap first
    assert report.disagreements[0].judge_pass and not report.disagreements[0].human_pass


def test_threshold_ties_pass():
    report = agreement([(0.5, 0.49), (0.49, 0.5)], threshold=0.5)
    assert report.confusion == ConfusionMatrix(tp=0, fp=1, fn=1, tn=0)


def test_pairs_with_none_are_skipped_and_counted():
    report = agreement([(0.9, 1.0), (None, 0.4), (0.3, None), (0.2, 0.1)])
    assert report.count == 2
    assert report.skipped == 2
    assert report.mae == pytest.approx(0.1)
    assert [d.index for d in report.disagreements] == []


def test_undefined_statistics_are_none_not_zero():
    empty = agreement([])
    assert (empty.count, empty.mae, empty.pearson, empty.kappa, empty.agreement_rate) == (
        0, None, None, None, None)
    single = agreement([(0.7, 0.9)])
    assert single.pearson is None
    assert single.kappa is None  # both sides always pass: chance agreement is total
    constant_judge = agreement([(0.8, 0.1), (0.8, 0.9), (0.8, 0.5)])
    assert constant_judge.pearson is None
    assert constant_judge.kappa == 0.0  # defined: the human varies, the judge does not
    assert agreement([(None, None)]).skipped == 1


def test_pearson_and_kappa_helpers():
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert pearson([1, 1], [1, 2]) is None
    assert cohen_kappa(ConfusionMatrix()) is None
    assert cohen_kappa(ConfusionMatrix(tp=0, fp=5, fn=5, tn=0)) == pytest.approx(-1.0)


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match=r"pair 1 must be \(judge_score, human_score\)"):
        agreement([(0.1, 0.2), (0.3,)])
    with pytest.raises(ValueError, match="pair 0 holds 'high'; scores must be finite numbers"):
        agreement([("high", 0.2)])
    with pytest.raises(ValueError, match="pair 0 holds nan"):
        agreement([(float("nan"), 0.2)])
    with pytest.raises(ValueError, match="threshold must be a finite number; got 'half'"):
        agreement([], threshold="half")


def _store_with_overrides(tmp_path):
    from studio.model.records import Candidate, Run, Split, Trial, TrialPhase
    from studio.store import open_store

    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    plan = {
        "run-a": ("rubric", [(0.9, 1.0), (0.8, 0.2), (0.3, 0.3), (None, 0.8)]),
        "run-b": ("exact", [(1.0, 1.0), (0.0, 0.0), (0.0, 1.0)]),
    }
    for run_id, (critic, pairs) in plan.items():
        store.create_run(Run(id=run_id, spec={"critic": {"name": critic}}))
        store.add_examples(run_id, Split.TRAIN, [{"input": "x"}])
        example = store.examples(run_id)[0]
        candidate = store.add_candidate(Candidate(run_id=run_id, index=0,
                                                  components={"instruction": "i"},
                                                  content_hash="h"))
        for judge, human in pairs:
            trial = store.add_trial(Trial(
                run_id=run_id, candidate_id=candidate.id, example_id=example.id,
                split=Split.TRAIN, example_index=0, phase=TrialPhase.VALSET, score=judge,
                feedback={"feedback": f"judge says {judge}"}, input_text="x", output="y"))
            store.add_override(trial.id, score=human, feedback="human view", author="ana")
    return store


def test_agreement_from_a_real_store_per_critic_run_and_overall(tmp_path):
    store = _store_with_overrides(tmp_path)
    summary = agreement_from_store(store, threshold=0.5)
    assert summary.overall.count == 6 and summary.overall.skipped == 1
    assert set(summary.per_critic) == {"rubric", "exact"}
    assert set(summary.per_run) == {"run-a", "run-b"}
    rubric = summary.per_critic["rubric"]
    assert isinstance(rubric, AgreementReport)
    assert rubric.count == 3 and rubric.skipped == 1
    assert rubric.confusion == ConfusionMatrix(tp=1, fp=1, fn=0, tn=1)
    assert rubric.mae == pytest.approx((0.1 + 0.6 + 0.0) / 3)
    (gap,) = rubric.disagreements
    assert (gap.judge_score, gap.human_score, gap.critic, gap.run_id) == (0.8, 0.2, "rubric",
                                                                          "run-a")
    assert gap.human_feedback == "human view" and gap.judge_feedback == "judge says 0.8"
    assert gap.trial_id is not None
    exact = summary.per_critic["exact"]
    assert exact.confusion == ConfusionMatrix(tp=1, fp=0, fn=1, tn=1)
    assert exact.kappa == pytest.approx(0.4)
    only_b = agreement_from_store(store, run_id="run-b")
    assert only_b.overall.count == 3 and set(only_b.per_run) == {"run-b"}
    store.close()
