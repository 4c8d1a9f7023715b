"""The newest candidates (fewer than 13 commits from their series' end) routed to a second model.

``triage score`` with a scoring model whose manifest names a newest-candidates
model (``extra.newest_model``) decides those candidates with that model: its
P(true), its threshold, an explanation that says so; every other candidate
keeps the scoring model's decision (:func:`triage.scoring.newest_route`).
The pair here is the bundled scoring model saved twice, the second copy with
every per-detector threshold 0 (calls everything true), so that which model
decided a candidate shows in its call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.core.errors import InputError
from triage.inference import load_classifier
from triage.model_lookup import bundled_model
from triage.training.model_files import save_model


def _pair(tmp_path, *, horizon: int = 13, name: str = "m-newest", newest_window: str | int = "adaptive"):
    clf = load_classifier(bundled_model("default-scoring"))
    extra = {k: v for k, v in clf.manifest_["extra"].items() if k != "newest_model"}
    everything = {**extra, "detector_thresholds": dict.fromkeys(extra["detector_thresholds"], 0.0)}
    if newest_window != "adaptive":
        everything = {k: v for k, v in everything.items() if k not in ("windows", "max_len", "pair", "context")}
    save_model(clf, tmp_path / "m-newest", window=newest_window, extra=everything)
    save_model(clf, tmp_path / "m", window="adaptive", extra={**extra, "newest_model": {"model": name, "horizon": horizon}})
    return tmp_path / "m"


def _two_steps(tmp_path, detector: str = "cusum"):
    rng = np.random.default_rng(0)
    v = 100 + rng.normal(0, 2, 100)
    v[40:] += 30
    v[95:] -= 30
    # a candidate on flat noise 8 commits from the end: the main model calls it false
    (tmp_path / "h.csv").write_text("series_id,commit,value\n" + "".join(f"s,c{i},{x}\n" for i, x in enumerate(v)))
    (tmp_path / "c.csv").write_text(f"series_id,commit,detector\ns,c40,{detector}\ns,c70,{detector}\n"
                                    f"s,c92,{detector}\ns,c95,{detector}\n")
    return tmp_path / "h.csv", tmp_path / "c.csv"


def _score(tmp_path, model, *extra):
    data, cands = _two_steps(tmp_path)
    out = tmp_path / f"o{len(list(tmp_path.glob('o*.csv')))}.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--model", model, "--out", out, *extra])
    assert code == 0, text
    return pd.read_csv(out).set_index("commit"), flat(text)


def test_the_newest_candidates_are_decided_by_the_model_the_manifest_names(tmp_path):
    model = _pair(tmp_path)
    routed, text = _score(tmp_path, model)
    alone, _ = _score(tmp_path, model, "--newest-model", "none")
    # c92 and c95 lie 8 and 5 commits from the end: the threshold-0 copy calls both true, and one
    # alert per change (the scoring model's radius, 10) keeps the stronger, c95
    assert alone.loc["c92", "classification"] == alone.loc["c95", "classification"] == "false_positive"
    assert routed.loc["c95", "classification"] == "true_positive"
    assert routed.loc["c95", "explanation"].startswith("newest-candidates model m-newest (fewer than 13 commits")
    assert routed.loc["c92", "classification"] == "false_positive"
    assert routed.loc["c92", "explanation"].startswith("duplicate: a stronger candidate is within 10 commits; "
                                                       "newest-candidates model m-newest")
    # the others keep the scoring model's decision, P(true) and explanation
    pd.testing.assert_frame_equal(routed.loc[["c40", "c70"]], alone.loc[["c40", "c70"]])
    assert "2 of the candidates lie fewer than 13 commits from the end of their series: scored by the " \
           "newest-candidates model m-newest at its threshold 0.000" in text


def test_the_horizon_comes_from_the_manifest(tmp_path):
    routed, text = _score(tmp_path, _pair(tmp_path, horizon=6))
    assert routed.loc["c95", "classification"] == "true_positive"
    assert not routed.loc["c92", "explanation"].startswith("newest-candidates model")  # 8 commits >= 6
    assert "1 of the candidates lies fewer than 6 commits" in text


def test_a_fixed_threshold_applies_to_the_newest_candidates_too(tmp_path):
    routed, _ = _score(tmp_path, _pair(tmp_path), "--threshold", "0.999")
    assert routed.loc["c92", "explanation"].startswith("newest-candidates model")
    assert routed.loc["c92", "classification"] == "false_positive"


def test_newest_model_can_be_named_on_the_command_line(tmp_path):
    model = _pair(tmp_path)
    routed, text = _score(tmp_path, "default-scoring", "--newest-model", str(tmp_path / "m-newest"))
    assert routed.loc["c95", "classification"] == "true_positive"
    assert f"newest-candidates model {tmp_path / 'm-newest'}" in text
    assert model.exists()


def test_a_newest_model_that_cannot_be_found_is_named(tmp_path):
    model = _pair(tmp_path, name="nowhere-newest")
    data, cands = _two_steps(tmp_path)
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--model", model])
    assert code != 0
    assert "nowhere-newest" in flat(text) and "no bundled model of this name" in flat(text)


def test_a_newest_model_on_other_windows_is_refused(tmp_path):
    model = _pair(tmp_path, newest_window=8)
    data, cands = _two_steps(tmp_path)
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--model", model])
    assert code != 0
    assert "builds other windows than the scoring model" in flat(text)


def test_a_manifest_entry_without_a_model_name_is_an_error():
    from triage.scoring import newest_route

    clf = load_classifier(bundled_model("default-scoring"))
    clf.manifest_ = {**clf.manifest_, "extra": {**clf.manifest_["extra"], "newest_model": {"model": "../x"}}}
    with pytest.raises(InputError, match="names no model"):
        newest_route(clf)
    clf.manifest_["extra"]["newest_model"] = {"model": "x", "horizon": "soon"}
    with pytest.raises(InputError, match="horizon is not a whole number"):
        newest_route(clf)
    assert newest_route(clf, "none") is None


def test_the_bundled_scoring_newest_calls_a_clear_step_five_commits_from_the_end(tmp_path):
    """The step of README's "newest alerts" paragraph (30 in noise sd 2, 5 commits from the end): the
    bundled default-scoring gives it P(true) 0.12, under cusum's threshold; scoring-newest 0.87."""
    data, cands = _two_steps(tmp_path)
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", tmp_path / "a.csv"])
    assert code == 0, text
    alone = pd.read_csv(tmp_path / "a.csv").set_index("commit")
    assert alone.loc["c95", "classification"] == "false_positive" and alone.loc["c95", "p_true"] < 0.2
    assert "or with --newest-model scoring-newest (trained on such candidates)" in flat(text)
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", tmp_path / "b.csv",
                         "--newest-model", "scoring-newest"])
    assert code == 0, text
    routed = pd.read_csv(tmp_path / "b.csv").set_index("commit")
    assert routed.loc["c95", "classification"] == "true_positive" and routed.loc["c95", "p_true"] > 0.8
    assert routed.loc["c92", "classification"] == "false_positive"  # noise 8 commits from the end stays false
    pd.testing.assert_frame_equal(routed.loc[["c40", "c70"]], alone.loc[["c40", "c70"]])
    assert "scored by the newest-candidates model scoring-newest at its threshold 0.229" in flat(text)


def test_the_scoring_newest_card_quotes_its_thresholds_and_says_it_is_opt_in():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    manifest = json.loads((root / "models" / "scoring-newest" / "manifest.json").read_text())
    card = " ".join((root / "models" / "README.md").read_text().split())
    for detector in ("bocpd", "perfherder", "cusum", "binseg", "pelt", "ensemble", "edivisive"):
        assert f"{detector} {manifest['extra']['detector_thresholds'][detector]:.3f}" in card, detector
    assert "newest_model" not in load_classifier(bundled_model("default-scoring")).manifest_["extra"]
    assert "`triage score --newest-model scoring-newest` hands the candidates" in card


def test_the_workspace_takes_the_newest_model_as_score_does(tmp_path):
    from triage.cli.workspace import build_workspace

    data, cands = _two_steps(tmp_path)
    kwargs = {"commit_url": None, "sheriff": "me", "token": None}
    alone = build_workspace(data, tmp_path / "a.db", cands, "default", **kwargs)
    routed = build_workspace(data, tmp_path / "b.db", cands, "default", newest_model="scoring-newest", **kwargs)
    p = {name: {a.commit: a.p_true for a in ws.alerts} for name, ws in (("alone", alone), ("routed", routed))}
    assert p["alone"]["c95"] < 0.2 < 0.8 < p["routed"]["c95"]
    assert p["alone"]["c40"] == p["routed"]["c40"] and p["alone"]["c70"] == p["routed"]["c70"]
    code, text = invoke(["serve", "--data", data, "--labels", tmp_path / "c.db", "--newest-model", "scoring-newest",
                         "--model", "none", "--port", "0"])
    assert code == 2 and "--newest-model goes with --model" in flat(text)
    # `--model none`, as its help says: no model column (was "no bundled model of this name")
    assert all(a.p_true is None for a in build_workspace(data, tmp_path / "d.db", cands, "none", **kwargs).alerts)
