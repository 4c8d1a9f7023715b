"""CUSUM, BOCPD, PELT / binary segmentation and ensemble voting."""

from __future__ import annotations

import numpy as np
import pytest
import ruptures as rpt

from triage.core.noise import robust_sigma
from triage.detectors import BinSeg, Bocpd, Cusum, Detector, Ensemble, Pelt, make
from triage.detectors.base import ChangePoint
from triage.detectors.ensemble import vote
from triage.detectors.penalised import refine_l2


def steps(levels, lengths, sd=1.0, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([lvl + rng.normal(0, sd, n) for lvl, n in zip(levels, lengths, strict=True)])


def test_robust_sigma_ignores_steps():
    x = steps([100, 130, 90], [100, 100, 100], sd=2.0)
    assert robust_sigma(x) == pytest.approx(2.0, rel=0.2)
    assert np.std(x) > 10  # what the plain deviation would have said
    assert robust_sigma(np.full(10, 5.0)) == 1.0


# --------------------------------------------------------------------------- CUSUM


def test_cusum_places_change_at_onset_and_reports_direction():
    x = steps([100, 108, 101], [120, 120, 120])
    cps = Cusum().detect(x)
    assert [c.index for c in cps] == [120, 240]
    assert [c.fields["direction"] for c in cps] == [1, -1]
    assert all(c.fields["alarm_index"] >= c.index for c in cps)


def test_cusum_drift_is_a_share_of_the_range():
    x = steps([100, 104], [150, 150])
    assert [c.index for c in Cusum().detect(x)] == [150]
    assert Cusum(drift=0.6).detect(x) == []  # slack above the step size: nothing accumulates


# --------------------------------------------------------------------------- BOCPD


def test_bocpd_start_probability_peaks_at_the_change():
    x = steps([10, 14], [100, 100])
    prob, lag = Bocpd().start_probabilities(x)
    assert prob[100] > 0.9
    assert np.max(np.delete(prob, [0, 100])) < 0.5
    assert lag[50] == 20 and lag[-1] == 0
    cps = Bocpd().detect(x)
    assert [c.index for c in cps] == [100]
    assert cps[0].score == pytest.approx(prob[100])


def test_bocpd_is_scale_free():
    x = steps([10, 14], [100, 100], seed=3)
    a = [c.index for c in Bocpd().detect(x)]
    b = [c.index for c in Bocpd().detect(1000 * x + 5e6)]
    assert a == b == [100]


def test_bocpd_single_outlier_is_not_a_change():
    x = steps([10], [200], seed=4)
    x[100] += 15
    assert Bocpd().detect(x) == []


# --------------------------------------------------------------------------- PELT / BinSeg


@pytest.mark.parametrize("cls", [Pelt, BinSeg])
def test_penalised_methods_find_all_steps(cls):
    x = steps([100, 106, 98, 103], [80, 70, 90, 60], seed=5)
    assert [c.index for c in cls().detect(x)] == [80, 150, 240]


def test_pelt_with_refinement_equals_full_resolution_ruptures():
    x = steps([100, 106, 98, 103], [83, 71, 92, 64], seed=6)
    sigma = robust_sigma(x)
    pen = 3.0 * sigma**2 * np.log(len(x))
    exact = rpt.Pelt(model="l2", min_size=5, jump=1).fit(x).predict(pen=pen)[:-1]
    assert [c.index for c in Pelt().detect(x)] == exact


def test_refine_l2_moves_breakpoints_to_least_squares_split():
    x = np.r_[np.zeros(23), np.ones(27)]
    assert refine_l2(x, [25], radius=4, min_size=2) == [23]
    assert refine_l2(x, [25], radius=1, min_size=2) == [24]


# --------------------------------------------------------------------------- ensemble


def test_vote_groups_within_margin_and_needs_min_votes():
    dets = [(100, "a"), (102, "b"), (104, "c"), (130, "a"), (131, "b"), (200, "c")]
    out = vote(dets, margin=5, min_votes=2)
    # each commit flagged once: the one nearest the members' mean; 130 and 131 tie (130.5): the earlier
    assert [(c.index, c.fields["votes"]) for c in out] == [(102, 3), (130, 2)]
    assert out[0].fields["methods"] == "a+b+c"
    assert [c.index for c in vote(dets, margin=5, min_votes=3)] == [102]
    assert vote(dets, margin=1, min_votes=2) == [ChangePoint(130, 2.0)]


def test_vote_counts_a_method_once_and_anchors_events():
    # one method twice in an event counts once; its detections are averaged (11) for the members'
    # mean (12.5), and the event is placed at a flagged commit nearest it, never at 13, which none flagged
    out = vote([(10, "a"), (12, "a"), (14, "b")], margin=5, min_votes=2)
    assert [(c.index, c.fields["votes"]) for c in out] == [(12, 2)]
    # events are anchored on their first detection: no chaining along 0, 4, 8, 12
    chain = [(0, "a"), (4, "b"), (8, "c"), (12, "d")]
    assert [c.fields["votes"] for c in vote(chain, margin=5, min_votes=1)] == [2, 2]


def test_an_event_is_placed_at_the_commit_most_members_flagged():
    """The mean named a commit no member flagged: all eight at 359, two also at 361 and 363 -> 360
    (rhai's bench_engine_new, the clearest step of the real histories)."""
    members = ["perfherder", "hybrid_welch", "hybrid_ks", "edivisive", "cusum", "bocpd", "pelt", "binseg"]
    dets = sorted([(359, m) for m in members] + [(361, "hybrid_ks"), (363, "hybrid_ks"), (363, "edivisive")])
    assert [c.index for c in vote(dets, margin=5, min_votes=3)] == [359]
    # two commits flagged by as many members: the one nearer the members' mean
    dets = sorted([(50, "a"), (50, "b"), (53, "c"), (53, "d"), (54, "e")])
    assert [c.index for c in vote(dets, margin=5, min_votes=3)] == [53]


def test_always_members_vote_yes_alone_at_their_own_index():
    dets = [(50, "perfherder"), (90, "pelt"), (91, "binseg"), (92, "cusum"), (140, "perfherder"), (142, "pelt")]
    out = vote(dets, margin=5, min_votes=3, always={"perfherder"})
    assert [(c.index, c.fields["votes"]) for c in out] == [(50, 1), (91, 3), (140, 2)]


class _Fixed(Detector):
    """A stand-in member that always reports the same indices."""

    def __init__(self, at=(), label="fixed"):
        self.at = at
        self.label = label

    def _find(self, x):
        return [ChangePoint(i, 1.0) for i in self.at]


def test_ensemble_runs_members_and_votes():
    a, b, c = _Fixed((40, 80), "a"), _Fixed((41,), "b"), _Fixed((39, 120), "c")
    for det, name in ((a, "a"), (b, "b"), (c, "c")):
        det.name = name
    ens = Ensemble(members=(a, b, c), margin=3, min_votes=2)
    assert [c.index for c in ens.detect(np.zeros(200))] == [40]
    assert set(ens.member_change_points_) == {"a", "b", "c"}
    ens = Ensemble(members=(a, b, c), margin=3, min_votes=2, always=("c",))
    assert [c.index for c in ens.detect(np.zeros(200))] == [39, 120]


def test_ensemble_rejects_bad_members():
    with pytest.raises(ValueError, match="not members"):
        Ensemble(members=("pelt", "binseg"), always=("perfherder",)).fit(np.zeros(50))
    with pytest.raises(ValueError, match="distinct"):
        Ensemble(members=("pelt", "pelt"), min_votes=2).fit(np.zeros(50))
    # votes no event could gather: was 0 candidates, indistinguishable from a quiet series
    with pytest.raises(ValueError, match="min_votes=3 of detector 'ensemble' is more than the 2 members"):
        make("ensemble", members=("pelt", "binseg")).fit(np.zeros(50))
    with pytest.raises(ValueError, match="at least one member"):
        Ensemble(members=()).fit(np.zeros(50))


def test_mozilla_or_ensemble_is_a_superset_of_both():
    x = steps([100, 103, 112, 104], [60, 60, 60, 60], sd=0.6, seed=7)
    members = ("perfherder", "edivisive", "pelt", "binseg", "cusum")
    ens = [c.index for c in make("ensemble", members=members).detect(x)]
    moz = [c.index for c in make("perfherder").detect(x)]
    both = [c.index for c in make("mozilla_or_ensemble", members=members).detect(x)]
    assert set(moz) <= set(both)
    for i in ens:
        assert any(abs(i - j) <= 5 for j in both)
    assert {60, 120, 180} <= set(both)
