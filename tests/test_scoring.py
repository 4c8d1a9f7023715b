"""Scoring detector candidates (triage.scoring, `triage score`): our CSV, Otava, Perfherder, bad input."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest
from test_batch_label import _matrix, trained_model
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.batch_label import label_candidates
from triage.candidate_files import read_candidates, resolve
from triage.cli.app import app
from triage.cli.detectors import candidates_frame
from triage.core import labels
from triage.core.errors import InputError
from triage.inference import NOT_SCORABLE, load_classifier
from triage.loaders import load, write_long
from triage.scoring import score_candidates, threshold_for_recall
from triage.synthetic import generate, preset_config
from triage.training.classifier import TriageClassifier
from triage.training.model_files import save_model

runner = CliRunner()


@pytest.fixture(scope="module")
def model_dir():
    return trained_model("rf")


@pytest.fixture(scope="module")
def clf(model_dir):
    return load_classifier(model_dir)


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    """Unseen synthetic series (seed 11) in the long CSV layout."""
    path = tmp_path_factory.mktemp("data") / "history.csv"
    return write_long(generate(preset_config("small", n_series=40, not_triaged_share=0.2), seed=11), path)


@pytest.fixture(scope="module")
def dataset(data_file):
    return load(data_file)


# --------------------------------------------------------------------------- our own candidates


def test_detector_candidates_scored_through_the_cli(dataset, data_file, model_dir, tmp_path):
    cands = candidates_frame(dataset, "edivisive")
    assert len(cands) > 20
    cand_file = tmp_path / "candidates.csv"
    cands.to_csv(cand_file, index=False)
    out = tmp_path / "scores.csv"
    result = runner.invoke(app, ["score", "--data", str(data_file), "--candidates", str(cand_file),
                                 "--model", str(model_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    # our own candidates file is not named as a layout ("(candidates)" read as a stutter)
    assert f"{len(cands)} candidates" in result.output and "(candidates" not in result.output
    scored = pd.read_csv(out, keep_default_na=False)
    assert len(scored) == len(cands)
    # The detector's own fields are kept, in front, unchanged.
    assert list(scored.columns[: len(cands.columns)]) == list(cands.columns)
    np.testing.assert_allclose(scored["p_value"].astype(float), cands["p_value"].astype(float))
    assert list(scored.columns[len(cands.columns):]) == ["p_false", "p_true", "classification", "explanation",
                                                         "change_pct", "change_kind"]
    # A candidate with an empty Pre (index 0, or right after a confirmed change point) is not scorable.
    empty_pre = [i == 0 or dataset[s].labels[i - 1] == labels.TRUE_POSITIVE
                 for s, i in zip(scored["series_id"], scored["index"].astype(int), strict=True)]
    unjudged = scored["classification"] == NOT_SCORABLE
    assert unjudged.tolist() == empty_pre
    assert (scored.loc[unjudged, "p_true"] == "").all()
    judged = scored[~unjudged]
    assert set(judged["classification"]) <= {labels.TRUE_POSITIVE, labels.FALSE_POSITIVE}
    np.testing.assert_allclose(judged["p_false"].astype(float) + judged["p_true"].astype(float), 1.0)


def test_rescoring_our_own_output_replaces_its_scores(dataset, data_file, model_dir, tmp_path):
    cand_file = tmp_path / "candidates.csv"
    candidates_frame(dataset, "edivisive").to_csv(cand_file, index=False)
    first, second = tmp_path / "scores.csv", tmp_path / "rescored.csv"
    for src, dst in ((cand_file, first), (first, second)):
        result = runner.invoke(app, ["score", "--data", str(data_file), "--candidates", str(src),
                                     "--model", str(model_dir), "--out", str(dst)])
        assert result.exit_code == 0, result.output
    a, b = pd.read_csv(first, keep_default_na=False), pd.read_csv(second, keep_default_na=False)
    assert list(b.columns) == list(a.columns)  # no duplicate or triage_-prefixed score columns
    pd.testing.assert_frame_equal(a, b)


def test_scores_agree_with_batch_labelling_at_labelled_commits(dataset, clf):
    # A detector candidate that falls on a labelled commit has the same windows, so the same P(true).
    labelled = label_candidates(dataset, clf, which="all", explain_top=0)
    frame = labelled[["series_id", "commit"]].copy()
    path_rows = frame.assign(detector="oracle", score=1.0)
    table = _table_from(path_rows)
    scored = score_candidates(dataset, table, clf, explain_top=0)
    np.testing.assert_allclose(scored["p_true"].to_numpy(float), labelled["p_true"].to_numpy(float), atol=1e-12)
    assert (scored["index"].to_numpy() == labelled["index"].to_numpy()).all()


def _table_from(frame: pd.DataFrame, name: str = "cands.csv"):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / name
    frame.to_csv(path, index=False)
    return read_candidates(path)


def test_index_only_candidates_and_the_threshold_overrides(dataset, clf, data_file, model_dir, tmp_path):
    h = next(iter(dataset))
    cand_file = tmp_path / "idx.csv"
    pd.DataFrame({"series_id": h.series_id, "index": [0, 5, len(h) - 1]}).to_csv(cand_file, index=False)
    table = read_candidates(cand_file)
    series, index = resolve(dataset, table)
    assert index.tolist() == [0, 5, len(h) - 1]
    everything = score_candidates(dataset, table, clf, threshold=0.0, explain_top=0)
    assert (everything["classification"] == labels.TRUE_POSITIVE).all()
    assert everything["commit"].tolist() == [h.commits[0], h.commits[5], h.commits[-1]]

    cut, n = threshold_for_recall(dataset, clf, 0.9)
    triaged = label_candidates(dataset, clf, which="triaged", explain_top=0)
    assert n == len(triaged)
    truth = triaged["label"] == labels.TRUE_POSITIVE
    assert (triaged.loc[truth, "p_true"] >= cut).mean() >= 0.9
    result = runner.invoke(app, ["score", "--data", str(data_file), "--candidates", str(cand_file),
                                 "--model", str(model_dir), "--target-recall", "0.9"])
    assert result.exit_code == 0, result.output
    assert f"at threshold {cut:.3f} (recall 0.9 on {n} triaged candidates" in result.output


# --------------------------------------------------------------------------- Apache Otava


@pytest.fixture(scope="module")
def otava_data(tmp_path_factory, dataset):
    """One synthetic series written in Otava's CSV layout (time, commit, metric column)."""
    h = max(dataset, key=lambda s: len(s.confirmed()))
    path = tmp_path_factory.mktemp("otava") / "perf.csv"
    pd.DataFrame({"time": pd.to_datetime(h.timestamps).strftime("%Y-%m-%d %H:%M:%S"), "commit": h.commits,
                  "throughput": h.values}).to_csv(path, index=False)
    return path, h


def _otava_report(h, indices):
    groups = []
    for i in indices:
        before, after = h.values[max(0, i - 20):i], h.values[i:i + 20]
        groups.append({
            "time": 1_700_000_000 + 3600 * int(i),
            "attributes": {"commit": h.commits[i], "branch": "main"},
            "changes": [{"metric": "throughput", "index": int(i),
                         "forward_change_percent": f"{100 * (after.mean() / before.mean() - 1):.0f}",
                         "magnitude": f"{abs(after.mean() / before.mean() - 1):f}",
                         "mean_before": f"{before.mean():f}", "stddev_before": f"{before.std():f}",
                         "mean_after": f"{after.mean():f}", "stddev_after": f"{after.std():f}",
                         "pvalue": "0.000100"}],
        })
    return {"nightly": groups}


def test_otava_json_report(otava_data, model_dir, tmp_path):
    path, h = otava_data
    indices = [int(i) for i in h.candidates()[:4]]
    report = tmp_path / "otava.json"
    report.write_text(json.dumps(_otava_report(h, indices)))
    out = tmp_path / "scored.csv"
    result = runner.invoke(app, ["score", "--data", str(path), "--candidates", str(report),
                                 "--model", str(model_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "4 candidates (otava-json file)" in result.output
    scored = pd.read_csv(out, keep_default_na=False)
    assert scored["series_id"].unique().tolist() == ["throughput"]
    assert scored["index"].tolist() == indices
    for field in ("test", "time", "attr_commit", "attr_branch", "forward_change_percent", "pvalue", "mean_before"):
        assert field in scored.columns
    assert (scored["attr_commit"] == scored["commit"]).all()


def test_otava_flat_csv(otava_data, clf, tmp_path):
    path, h = otava_data
    indices = [int(i) for i in h.candidates()[:3]]
    rows = [{"time": g["time"], "commit": g["attributes"]["commit"], **g["changes"][0]}
            for g in _otava_report(h, indices)["nightly"]]
    csv = tmp_path / "otava.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    table = read_candidates(csv)
    assert table.layout == "otava-csv"
    scored = score_candidates(load(path), table, clf)
    assert scored["index"].astype(int).tolist() == indices
    assert "triage_index" not in scored  # Otava's index and the commit agree here


# --------------------------------------------------------------------------- Perfherder


def _perfherder_payload(dataset, n=5):
    summaries = []
    k = 0
    for h in list(dataset)[:n]:
        idx = h.candidates()
        if not len(idx):
            continue
        i = int(idx[0])
        k += 1
        summaries.append({
            "id": 1000 + k, "revision": h.commits[i], "prev_push_revision": h.commits[i - 1] if i else None,
            "push_timestamp": 1_700_000_000 + k, "status": 0, "repository": "autoland", "framework": 13,
            "alerts": [{
                "id": 50_000 + k, "status": 0, "is_regression": True, "amount_pct": 4.2, "t_value": 7.5,
                "prev_value": float(h.values[max(0, i - 1)]), "new_value": float(h.values[i]),
                "series_signature": {"id": 9000 + k, "signature_hash": h.series_id, "framework_id": 13,
                                     "machine_platform": "linux1804-64", "suite": "speedometer", "test": f"t{k}",
                                     "lower_is_better": False, "tags": ["a"]},
            }],
        })
    return {"count": len(summaries), "next": None, "previous": None, "results": summaries}


def test_perfherder_alert_summaries(dataset, data_file, model_dir, tmp_path):
    payload = _perfherder_payload(dataset)
    path = tmp_path / "alerts.json"
    path.write_text(json.dumps(payload))
    out = tmp_path / "scored.csv"
    result = runner.invoke(app, ["score", "--data", str(data_file), "--candidates", str(path),
                                 "--model", str(model_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    scored = pd.read_csv(out, keep_default_na=False)
    assert len(scored) == len(payload["results"])
    assert scored["revision"].tolist() == scored["commit"].tolist()
    assert scored["alert_id"].tolist() == [a["alerts"][0]["id"] for a in payload["results"]]
    for field in ("summary_id", "amount_pct", "t_value", "signature_hash", "signature_suite", "is_regression"):
        assert field in scored.columns


def test_perfherder_series_found_by_name_and_flat_csv(dataset, clf, tmp_path):
    payload = _perfherder_payload(dataset, n=3)
    flat = []
    renamed = []
    for s in payload["results"]:
        a = s["alerts"][0]
        sig = a["series_signature"]
        flat.append({"alert_id": a["id"], "signature_hash": sig["signature_hash"], "revision": s["revision"],
                     "status": a["status"], "amount_pct": a["amount_pct"]})
        renamed.append(sig["signature_hash"])
        sig["signature_hash"] = "0" * 40  # unknown hash: fall back to "suite test platform"
        sig["test"] = ""
        sig["suite"] = sig_name = f"suite-{len(renamed)}"
        a["series_signature"] = sig
        renamed[-1] = (renamed[-1], f"{sig_name} {sig['machine_platform']}")
    csv = tmp_path / "alerts.csv"
    pd.DataFrame(flat).to_csv(csv, index=False)
    table = read_candidates(csv)
    assert table.layout == "perfherder-csv"
    assert len(score_candidates(dataset, table, clf, explain_top=0)) == len(flat)

    # A dataset whose series are named "suite platform", as a Perfherder export might name them.
    frame = dataset.to_frame()
    frame = frame[frame["series_id"].isin([old for old, _ in renamed])]
    frame["series_id"] = frame["series_id"].map(dict(renamed))
    named = tmp_path / "named.csv"
    frame.to_csv(named, index=False)
    path = tmp_path / "alerts.json"
    path.write_text(json.dumps(payload))
    scored = score_candidates(load(named), read_candidates(path), clf, explain_top=0)
    assert scored["series_id"].tolist() == [new for _, new in renamed]


# --------------------------------------------------------------------------- bad input


def _write(tmp_path, text, name="c.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "body, row, problem",
    [
        ("series_id,commit\nnope,abc\n", 2, "unknown series 'nope'"),
        ("series_id,commit\n{sid},{c0}\n{sid},zzz\n", 3, "commit 'zzz' is not in series"),
        ("series_id,index\n{sid},99999\n", 2, "index 99999 is outside series"),
        ("series_id,index\n{sid},-1\n", 2, "index -1 is outside series"),
        ("series_id,index\n{sid},NaN\n", 2, "index is NaN"),
        ("series_id,index\n{sid},2.5\n", 2, "not a whole number"),
        ("series_id,commit,index\n{sid},{c0},7\n", 2, "index 7 disagrees with commit"),
        ("series_id,detector\n{sid},x\n", 1, "need a 'commit' or an 'index' column"),
    ],
)
def test_bad_candidates_name_file_row_and_problem(dataset, clf, tmp_path, body, row, problem):
    h = next(iter(dataset))
    path = _write(tmp_path, body.format(sid=h.series_id, c0=h.commits[0]))
    with pytest.raises(InputError) as info:
        score_candidates(dataset, read_candidates(path), clf)
    err = info.value
    assert err.source == str(path) and err.row == row
    assert problem in err.problem


def test_bad_json_reports(tmp_path, dataset):
    bad = _write(tmp_path, '{"results": [{"revision": "abc", "alerts": [{"id": 1}]}]}', "p.json")
    with pytest.raises(InputError, match="alert has no series_signature") as info:
        resolve(dataset, read_candidates(bad))
    assert info.value.row == 1
    broken = _write(tmp_path, '{"nightly": [', "o.json")
    with pytest.raises(InputError, match="not valid JSON"):
        read_candidates(broken)
    with pytest.raises(InputError, match="cannot tell the candidate layout"):
        read_candidates(_write(tmp_path, "a,b\n1,2\n"))


def test_model_with_a_foreign_feature_set_is_refused(tmp_path):
    m = _matrix().rename(columns={"after_entropy": "after_holt_alpha"})
    clf = TriageClassifier(n_estimators=5, features=["after_holt_alpha", "norm_mean_after"]).fit(m)
    save_model(clf, tmp_path / "foreign", window="adaptive")
    with pytest.raises(InputError, match="feature set does not match.*after_holt_alpha") as info:
        load_classifier(tmp_path / "foreign")
    assert info.value.source == str(tmp_path / "foreign")


def test_target_recall_needs_triaged_candidates(clf, tmp_path):
    data = _write(tmp_path, "series_id,commit,value\ns,a,1\ns,b,2\ns,c,1.5\n", "d.csv")
    with pytest.raises(InputError, match="--target-recall needs triaged candidates"):
        threshold_for_recall(load(data), clf, 0.9)


def test_cli_bad_input_exits_2_with_one_line_and_writes_nothing(data_file, model_dir, tmp_path):
    cand = _write(tmp_path, "series_id,index\nnope,3\n")
    out = tmp_path / "scores.csv"
    proc = subprocess.run(
        [*warm_triage(), "score", "--data", str(data_file), "--candidates", str(cand),
         "--model", str(model_dir), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert f"{cand}, row 2: unknown series 'nope'" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_output_is_written_atomically(dataset, clf, tmp_path, monkeypatch):
    from triage.core.atomic import write_csv_atomic

    out = tmp_path / "scores.csv"
    out.write_text("the previous, complete file\n")
    h = next(iter(dataset))
    scored = score_candidates(dataset, _table_from(pd.DataFrame({"series_id": [h.series_id], "index": [3]})), clf)
    real = pd.DataFrame.to_csv

    def half_then_crash(self, path, *args, **kwargs):
        real(self.iloc[: len(self) // 2], path, *args, **kwargs)
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_crash)
    with pytest.raises(OSError, match="disk full"):
        write_csv_atomic(scored, out)
    monkeypatch.undo()
    assert out.read_text() == "the previous, complete file\n"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.csv"]
    write_csv_atomic(scored, out)
    assert len(pd.read_csv(out)) == 1


def test_points_given_in_code_repeats_and_an_empty_table(dataset, clf):
    from triage.candidate_files import CandidateTable

    h = list(dataset)[1]
    table = CandidateTable.from_points([h.series_id] * 3, [7, 2, 7])
    scored = score_candidates(dataset, table, clf, explain_top=1)
    assert scored["index"].tolist() == [7, 2, 7]
    assert scored.loc[0, "p_true"] == scored.loc[2, "p_true"]
    assert scored["explanation"].str.len().gt(0).all()
    empty = score_candidates(dataset, CandidateTable.from_points([], []), clf)
    assert len(empty) == 0 and {"p_true", "classification"} <= set(empty.columns)


def test_a_hand_built_candidate_without_commit_or_index_is_an_input_error(dataset):
    """Was a TypeError (None compared with 0) from resolve, i.e. an internal error."""
    import pandas as pd

    from triage.candidate_files import CandidateTable

    h = list(dataset)[0]
    table = CandidateTable(pd.DataFrame({"series_id": [h.series_id]}), [(h.series_id,)], [None], [None], [2],
                           "candidates", "hand.csv")
    with pytest.raises(InputError) as info:
        resolve(dataset, table)
    assert info.value.row == 2 and "neither a commit nor an index" in info.value.problem


def test_nan_in_the_data_is_an_input_error_naming_the_row(tmp_path):
    data = _write(tmp_path, "series_id,commit,value\ns,a,1\ns,b,NaN\ns,c,2\n", "nan.csv")
    with pytest.raises(InputError) as info:
        load(data)
    assert info.value.row == 3 and "NaN" in info.value.problem


# --------------------------------------------------------------------------- candidate-bounded scoring models


def test_candidate_window_model_scores_fresh_candidates_on_their_own_windows(dataset, tmp_path):
    """A scoring model records candidate-bounded windows; scoring rebuilds exactly those rows."""
    from triage.features.extract import extract_features
    from triage.features.level_shift import PAIR_COLUMNS
    from triage.scoring import default_threshold

    cands = candidates_frame(dataset, "perfherder")
    wanted = {sid: g["index"].to_numpy() for sid, g in cands.groupby("series_id")}
    m = extract_features(dataset, candidates=wanted, candidate_windows=True, max_len=40, pair=True)
    m["det_score_rank"] = np.nan  # set below from the file, as scoring does
    truth = {h.series_id: h.true_change_points() for h in dataset}
    y = np.array([np.any(np.abs(truth[s] - i) <= 5) for s, i in zip(m["series_id"], m["index"], strict=True)])
    assert 0 < y.sum() < len(y)
    cols = [*PAIR_COLUMNS, "pre_entropy", "after_entropy"]
    clf = TriageClassifier(features=cols, n_estimators=30, random_state=0).fit(m[cols], y.astype(int))
    out = tmp_path / "scoring-model"
    save_model(clf, out, window="adaptive",
               extra={"windows": "candidates", "max_len": 40, "pair": True, "detector_thresholds": {"perfherder": 0.25}})
    loaded = load_classifier(out)
    cand_file = tmp_path / "c.csv"
    cands.to_csv(cand_file, index=False)
    table = read_candidates(cand_file)
    scored = score_candidates(dataset, table, loaded, explain_top=0)
    # the same probabilities as the model gives on the candidate-bounded rows
    expect = pd.Series(clf.predict_proba(m[cols])[:, 1], index=pd.MultiIndex.from_frame(m[["series_id", "index"]]))
    got = expect.loc[list(zip(scored["series_id"], scored["index"].astype(int), strict=True))].to_numpy()
    assert np.allclose(scored["p_true"].to_numpy(float), got)
    # the file names one detector the model has a validation threshold for
    assert default_threshold(loaded, table) == (0.25, "the model's for perfherder, chosen on fit and validation data")


def test_scoring_model_with_context_suppresses_duplicates(dataset, tmp_path):
    """A model with ``ctx_*`` columns and a suppression radius: one true call per neighbourhood."""
    from triage.features.candidate_context import CONTEXT_COLUMNS
    from triage.features.extract import extract_features
    from triage.features.level_shift import PAIR_COLUMNS

    cands = candidates_frame(dataset, "binseg")
    wanted = {sid: g["index"].to_numpy() for sid, g in cands.groupby("series_id")}
    m = extract_features(dataset, candidates=wanted, candidate_windows=True, pair=True, context=True)
    truth = {h.series_id: h.true_change_points() for h in dataset}
    y = np.array([np.any(np.abs(truth[s] - i) <= 5) for s, i in zip(m["series_id"], m["index"], strict=True)])
    cols = [*PAIR_COLUMNS, *CONTEXT_COLUMNS]
    clf = TriageClassifier(features=cols, n_estimators=30, random_state=0).fit(m[cols], y.astype(int))
    cand_file = tmp_path / "c.csv"
    cands.to_csv(cand_file, index=False)
    table = read_candidates(cand_file)
    scored = {}
    for radius in (0, 10):
        out = tmp_path / f"ctx-{radius}"
        save_model(clf, out, window="adaptive", extra={"windows": "candidates", "max_len": 60, "pair": True,
                                                       "context": True, "suppress_radius": radius})
        scored[radius] = score_candidates(dataset, table, load_classifier(out), threshold=0.05, explain_top=0)
    loose, strict = scored[0], scored[10]
    assert np.allclose(loose["p_true"].to_numpy(float), strict["p_true"].to_numpy(float), equal_nan=True)
    was_true = loose["classification"] == labels.TRUE_POSITIVE
    now_true = strict["classification"] == labels.TRUE_POSITIVE
    dropped = was_true & ~now_true
    assert dropped.any() and not (now_true & ~was_true).any()
    assert strict.loc[dropped, "explanation"].str.startswith("duplicate: a stronger candidate is within 10").all()
    for _, g in strict[now_true].groupby("series_id"):
        assert (np.diff(np.sort(g["index"].to_numpy(int))) > 10).all()
    # every dropped call has a stronger kept one within 10 commits
    for _, r in strict[dropped].iterrows():
        near = strict[now_true & (strict["series_id"] == r["series_id"])]
        close = near[(near["index"].astype(int) - int(r["index"])).abs() <= 10]
        # a weaker kept call may also lie within 10 when it is more than 10 from the stronger one
        assert (close["p_true"] >= r["p_true"]).any()


def test_bundled_scoring_model_is_the_default_of_score(dataset, data_file, tmp_path):
    """models/default-scoring: small, verified, candidate-bounded, per-detector thresholds; `triage score` uses it."""
    from triage.inference import candidate_windowing, detector_threshold
    from triage.model_lookup import bundled_model, resolve_model

    path = bundled_model("default-scoring")
    assert resolve_model(None, "scoring") == path
    assert sum(f.stat().st_size for f in path.iterdir()) < 5 * 2**20
    model = load_classifier(path)
    assert candidate_windowing(model)["pair"] is True
    assert detector_threshold(model, "perfherder") is not None
    cands = candidates_frame(dataset, "binseg")
    cand_file = tmp_path / "binseg.csv"
    cands.to_csv(cand_file, index=False)
    out = tmp_path / "scored.csv"
    result = runner.invoke(app, ["score", "--data", str(data_file), "--candidates", str(cand_file),
                                 "--out", str(out), "--explain", "0"], env={"TRIAGE_MODEL": ""})
    assert result.exit_code == 0, result.output
    assert "the model's for binseg" in result.output
    scored = pd.read_csv(out)
    cut = detector_threshold(model, "binseg")
    called = scored["classification"] == "true_positive"
    assert (scored.loc[called, "p_true"] >= cut).all()
    # above the cut but not called: only duplicates of a stronger call nearby (the model's radius)
    dup = (scored["p_true"] >= cut) & ~called
    assert scored.loc[dup, "explanation"].fillna("").astype(str).str.startswith("duplicate").all()


def test_train_candidate_windows_gives_a_scoring_model(tmp_path, dataset):
    """`triage train --candidate-windows` records the windows `triage score` must rebuild."""
    from triage.inference import candidate_windowing

    out = tmp_path / "cw"
    result = runner.invoke(app, ["train", "--preset", "small", "--candidate-windows", "--out", str(out), "--no-track"])
    assert result.exit_code == 0, result.output
    model = load_classifier(out)
    assert candidate_windowing(model) == {"max_len": 60, "pair": True, "context": True}
    assert any(c.startswith("pair_") for c in model.feature_names_)
    assert any(c.startswith("ctx_") for c in model.feature_names_)
    bad = runner.invoke(app, ["train", "--preset", "small", "--candidate-windows", "--window", "3", "--out", str(tmp_path / "x"), "--no-track"])
    assert bad.exit_code != 0 and "--candidate-windows" in bad.output


def test_bundled_scoring_model_never_lowers_p_true_for_a_larger_shift():
    """default-scoring is held monotone in the shift-size columns: a larger shift, all else equal, never lowers P(true)."""
    from triage.model_lookup import bundled_model
    from triage.training.model_kinds import monotone_increasing

    model = load_classifier(bundled_model("default-scoring"))
    cols = list(model.feature_names_)
    up = [c for c, m in zip(cols, monotone_increasing(cols), strict=True) if m]
    assert {"pair_robust_shift", "ctx_shift_diffnoise"} <= set(up)
    rng = np.random.default_rng(0)
    base = pd.DataFrame(rng.normal(size=(12, len(cols))), columns=cols)
    grid = np.linspace(0.0, 40.0, 41)
    for col in up:
        rows = base.loc[base.index.repeat(len(grid))].reset_index(drop=True)
        rows[col] = np.tile(grid, len(base))
        p = model.predict_proba(rows)[:, 1].reshape(len(base), len(grid))
        assert (np.diff(p, axis=1) >= -1e-12).all(), col


def test_perfherder_and_otava_files_get_their_detectors_thresholds(dataset, otava_data, tmp_path):
    """A Perfherder alerts export is Perfherder's alerts and an Otava report E-Divisive's: without a
    ``detector`` column they were scored at the bundled model's general threshold (0.018), far below
    the thresholds chosen for those detectors (found in the sixteenth session's walkthrough)."""
    from triage.inference import detector_threshold
    from triage.model_lookup import resolve_model
    from triage.scoring import default_threshold

    bundled = load_classifier(resolve_model(None, "scoring"))
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps(_perfherder_payload(dataset)))
    path, h = otava_data
    report = tmp_path / "otava.json"
    report.write_text(json.dumps(_otava_report(h, [int(i) for i in h.candidates()[:3]])))
    for file, detector in ((alerts, "perfherder"), (report, "edivisive")):
        table = read_candidates(file)
        assert table.detectors() == [detector]
        cut, why = default_threshold(bundled, table)
        assert cut == detector_threshold(bundled, detector) != float(bundled.threshold_)
        assert f"for {detector}" in why
    # a file of our own names its detector in a column, which wins over any layout
    own = tmp_path / "c.csv"
    candidates_frame(dataset, "binseg").to_csv(own, index=False)
    assert read_candidates(own).detectors() == ["binseg"]
