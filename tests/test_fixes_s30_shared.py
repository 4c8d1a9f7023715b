"""Defects found by the thirtieth session's walkthroughs, fixed there.

1. Two real regressions a few commits apart, scored with the bundled scoring
   model: the weaker was called a duplicate of the stronger (its suppression
   radius is 10 commits) while ``score --help`` said 5, and nothing could
   keep both. ``score --suppress-radius N`` now sets the radius (0 keeps every
   true call) and the help names the model's 10.
(The warm-up trimming's defect, a never-steady fork kept whole beside its
trimmed siblings: ``tests/test_walkthrough_s21_warmup.py`` and
``tests/test_steady_state.py``.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke


def _two_steps(tmp_path, gap: int):
    """One series, 100 -> 130 at commit 40 -> 160 at 40 + gap (noise sd 1), and a candidate at each step."""
    rng = np.random.default_rng(7)
    x = 100 + rng.standard_normal(100) + 30 * (np.arange(100) >= 40) + 30 * (np.arange(100) >= 40 + gap)
    data = tmp_path / "h.csv"
    pd.DataFrame({"series_id": "s1", "commit": [f"c{i:03d}" for i in range(100)], "value": x}).to_csv(data, index=False)
    cands = tmp_path / "c.csv"
    cands.write_text("series_id,commit,index,detector\n" + "".join(f"s1,c{i:03d},{i},pelt\n" for i in (40, 40 + gap)))
    return data, cands


def test_two_regressions_six_commits_apart_are_both_kept_with_suppress_radius_0(tmp_path):
    data, cands = _two_steps(tmp_path, 6)
    calls = {}
    for radius in (None, 3, 0):
        out = tmp_path / f"s{radius}.csv"
        code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", out, "--show", "0",
                             *(() if radius is None else ("--suppress-radius", str(radius)))])
        assert code == 0, text
        scored = pd.read_csv(out)
        calls[radius] = scored["classification"].tolist()
        if radius is None:  # the model's radius, 10: the weaker step is the duplicate
            assert scored["explanation"][calls[None].index("false_positive")].startswith(
                "duplicate: a stronger candidate is within 10 commits")
    assert sorted(calls[None]) == ["false_positive", "true_positive"]
    assert calls[3] == calls[0] == ["true_positive", "true_positive"]


def test_suppress_radius_is_checked_and_the_help_names_the_models(tmp_path):
    data, cands = _two_steps(tmp_path, 6)
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--suppress-radius", "-1"])
    assert code == 2 and "Invalid value for --suppress-radius: must be >= 0, got -1" in flat(text), text
    code, text = invoke(["score", "--help"])
    assert code == 0
    assert "10 commits of each other (its suppression radius; --suppress-radius)" in flat(text), text
    assert "within 5 commits" not in flat(text)


def test_train_refuses_a_window_the_online_loop_cannot_run(tmp_path):
    """``train --window 1000`` trained (held-out AUC 1.000: an After window as long as the series) a
    model that watch and detect then refused: over the loop's largest confirmation delay."""
    from triage.online.loop import MAX_CONFIRM

    data, _ = _two_steps(tmp_path, 6)
    code, text = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track", "--window",
                         str(MAX_CONFIRM + 1)])
    assert code == 2, text
    assert f"Invalid value for --window: must be in [0, {MAX_CONFIRM}], got {MAX_CONFIRM + 1}" in flat(text), text
    assert not (tmp_path / "m").exists()


def test_the_confirm_after_help_gives_its_whole_range():
    from triage.online.loop import MAX_CONFIRM

    for command in ("watch", "detect"):
        code, text = invoke([command, "--help"])
        assert code == 0
        assert f"0 to {MAX_CONFIRM}." in flat(text) and "x>=0" not in flat(text), text


def test_an_ensemble_naming_a_member_twice_is_refused_before_any_series(tmp_path):
    """It was reported as the detector failing on the first series, which it named."""
    data, _ = _two_steps(tmp_path, 6)
    code, text = invoke(["candidates", "--data", data, "--detector", "ensemble", "--param", "members=pelt,pelt",
                         "--param", "min_votes=2", "--out", tmp_path / "out.csv"])
    assert code == 2, text
    assert ("Invalid value for --param: parameter members=('pelt', 'pelt') of detector 'ensemble' must name "
            "distinct detectors; 'pelt' is named twice") in flat(text), text
    assert "failed on series" not in flat(text) and not (tmp_path / "out.csv").exists()


def test_the_defaults_triage_detectors_lists_are_what_param_reads_back():
    """``members=('perfherder', ...)`` as listed was refused by ``--param``: quotes and brackets."""
    from triage.detectors import defaults, names, parse_params

    code, text = invoke(["detectors"])
    assert code == 0
    assert "members=perfherder,hybrid_welch,hybrid_ks,edivisive," in text.replace("\n", "").replace("│", "").replace(" ", "")
    from triage.core.params import as_text

    for name in names():
        given = defaults(name)
        back = parse_params(name, [f"{k}={as_text(v)}" for k, v in given.items()])
        assert back == given, name


@pytest.mark.parametrize("command", ["summary", "score"])
def test_a_quote_never_closed_is_named_at_its_own_line(tmp_path, command):
    """pandas' "EOF inside string starting at row 30" counts lines from 0: the user went to line 30."""
    good = tmp_path / "h.csv"
    good.write_text("series_id,commit,value\n" + "".join(f"a,c{i},{i % 3}\n" for i in range(10)))
    broken = tmp_path / "b.csv"
    if command == "summary":
        broken.write_text("series_id,commit,value\na,c1,1\na,c2,2\na,\"c3,3\na,c4,4\n")
        args = ["summary", "--data", broken]
    else:
        broken.write_text("series_id,commit,index\na,c1,1\na,\"c2,2\n")
        args = ["score", "--data", good, "--candidates", broken, "--out", tmp_path / "s.csv"]
    code, text = invoke(args)
    assert code == 2, text
    row = 4 if command == "summary" else 3
    assert f"{broken}, row {row}: a quote (\") opened in this row is never closed" in flat(text), text


def test_watch_csv_on_a_gzip_file_gives_the_pipe_that_reads_it(tmp_path):
    """The hint said "pipe it as JSON lines", missing `zcat FILE | triage watch --csv -`, which works."""
    import gzip

    path = tmp_path / "h.csv.gz"
    path.write_bytes(gzip.compress(b"series_id,commit,value\ns,a,1\ns,b,2\n", mtime=0))
    code, text = invoke(["watch", "--csv", path])
    assert code == 2, text
    assert f"is gzip-compressed; --csv reads plain text, which it can follow: pipe it decompressed (zcat {path} | " \
           "triage watch --csv -), or decompress it first" in flat(text), text


def test_train_window_k_without_a_confirmed_change_says_so(tmp_path):
    """It said "only false_positive candidates" of a file with no labelled alert at all: the
    ordinary commits it adds itself were the only rows."""
    data = tmp_path / "h.csv"
    rng = np.random.default_rng(0)
    data.write_text("series_id,commit,value\n" + "".join(
        f"s{s},c{i},{100 + rng.standard_normal():.3f}\n" for s in range(3) for i in range(60)))
    code, text = invoke(["train", "--data", data, "--window", "4", "--out", tmp_path / "m", "--no-track"])
    assert code == 2, text
    assert ("no confirmed change point (label true_positive) to learn from: the ordinary commits added with a "
            "fixed --window are negatives only") in flat(text), text
    assert "only false_positive" not in flat(text)


def test_ordinary_per_series_is_refused_where_nothing_adds_ordinary_commits(tmp_path):
    """With --window adaptive it was taken and ignored, silently."""
    data, _ = _two_steps(tmp_path, 6)
    code, text = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track",
                         "--ordinary-per-series", "5"])
    assert code == 2, text
    assert ("Invalid value for --ordinary-per-series: adds ordinary commits to the rows a fixed --window K "
            "builds from --data or --preset") in flat(text), text
    assert not (tmp_path / "m").exists()


def test_a_broken_jmh_file_is_named_at_its_line_and_column(tmp_path):
    """JMH writes one long line: "row 1: ... Unterminated string starting at" said neither where nor what."""
    path = tmp_path / "c1.json"
    text = ('[{"benchmark": "org.acme.T.run", "mode": "thrpt", "primaryMetric": {"rawData": [[1.0, 2.0]]}}, '
            '{"benchmark": "org.acme.T.cut')
    path.write_text(text)
    column = text.index('"org.acme.T.cut') + 1
    code, said = invoke(["steady", path, "--out", tmp_path / "s.csv"])
    assert code == 2, said
    assert (f"{path}, row 1: not JMH JSON results: not valid JSON: Unterminated string starting at "
            f"(line 1, column {column})") in flat(said), said


def test_google_benchmark_names_a_missing_time_and_a_failed_benchmark_once(tmp_path):
    import json
    import warnings

    from triage.readers.gbench import gbench_frame

    run = {"context": {"date": "2026-11-30"}, "benchmarks": [
        {"name": "BM_ok", "run_type": "iteration", "repetition_index": 0, "real_time": 10.0, "cpu_time": 10.0,
         "time_unit": "ns", "iterations": 100},
        *({"name": "BM_fail", "run_type": "iteration", "repetition_index": r, "error_occurred": True,
           "error_message": "boom"} for r in range(2)),
    ]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(run))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gbench_frame(run, path)
    said = " ".join(str(w.message) for w in caught)
    assert "1 benchmark(s) failed in this run and have no measurement: BM_fail (boom)" in said, said
    del run["benchmarks"][0]["real_time"]
    path.write_text(json.dumps(run))
    code, text = invoke(["steady", path, "--out", tmp_path / "s.csv"])
    assert code == 2, text
    assert f"{path}, row 1: BM_ok: no real_time (a Google Benchmark result has one)" in flat(text), text


def test_sample_of_a_history_measured_everywhere_answers_without_a_fit(tmp_path, monkeypatch):
    """A real series of 1,640 measured commits took 29 CPU-s (the fit) to print an empty table."""
    import triage.sampling.partial as partial

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted")

    monkeypatch.setattr(partial, "sample_plan", no_fit)
    every = tmp_path / "every.csv"
    every.write_text("commit,value\na,1\nb,1.5\nc,2\n")
    code, text = invoke(["sample", "--data", every, "--budget", "2"])
    assert code == 0, text
    assert "3 commits, every commit is measured: nothing left to measure (--out FILE writes the estimated " \
           "history)" in flat(text), text


def test_an_output_folder_that_refuses_files_is_named_before_any_work(tmp_path, monkeypatch):
    """A folder refusing new files (chattr +i, /sys, read-only) was found out after the whole run, in
    an error naming the hidden temporary file (.c.csv.i2g7u8y0.tmp)."""
    import tempfile

    import triage.core.atomic as atomic

    data, _ = _two_steps(tmp_path, 6)
    shut = tmp_path / "shut"
    shut.mkdir()
    real = tempfile.mkstemp

    def refuse(*args, dir=None, **kwargs):  # what an immutable folder answers, even to root
        if dir is not None and Path(dir) == shut:
            raise PermissionError(1, "Operation not permitted")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    ran = []
    monkeypatch.setattr("triage.detectors.registry.make", lambda *a, **k: ran.append(1))
    for out in (shut / "c.csv", shut / "new" / "c.csv"):
        code, text = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", out])
        assert code == 2, text
        # Without blanks: a long path is folded in the error box, and the fold reads as a blank.
        said = f"Invalid value for '--out': {out}: cannot write here: the folder {shut}: Operation not permitted"
        assert said.replace(" ", "") in flat(text).replace(" ", ""), text
        assert ".tmp" not in text and ran == []
    assert list(shut.iterdir()) == []


def test_candidates_found_with_a_commit_order_are_scored_and_reported_with_it(tmp_path):
    """score and report had no --commit-order: the candidates' own file was refused ("index 40 disagrees
    with commit 'c040', which is at index 41")."""
    rng = np.random.default_rng(3)
    rows = [("s1", f"c{i:03d}", 100 + rng.standard_normal() + 20 * (i >= 40)) for i in range(80)]
    rows.insert(5, ("s1", "c060", 120 + rng.standard_normal()))  # c060 re-measured early: first seen at row 6
    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"{s},{c},{v:.3f}\n" for s, c, v in rows))
    order = tmp_path / "order.txt"
    order.write_text("".join(f"c{i:03d}\n" for i in range(80)))
    cands, scored = tmp_path / "c.csv", tmp_path / "s.csv"
    code, text = invoke(["candidates", "--data", data, "--commit-order", order, "--detector", "pelt", "--out", cands])
    assert code == 0, text
    assert "s1,c040,40," in cands.read_text()
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", scored, "--show", "0"])
    assert code == 2 and "(candidates found with --commit-order: give the same file here too)" in flat(text), text
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", scored, "--show", "0",
                         "--commit-order", order])
    assert code == 0, text
    assert pd.read_csv(scored)[["commit", "index"]].values.tolist() == [["c040", 40]]
    code, text = invoke(["report", "--data", data, "--decisions", scored, "--candidates", cands, "--out",
                         tmp_path / "rep", "--commit-order", order])
    assert code == 0, text
    assert (tmp_path / "rep" / "index.html").is_file()


def test_a_finished_command_runs_its_exit_functions_and_ignores_a_late_ctrl_c(tmp_path):
    """A Ctrl-C in the 1.6 s a finished `train` spent tearing down its modules made it exit 130, its
    model written and registered. Now the end skips the teardown (atexit functions still run) and
    a Ctrl-C from then on is ignored."""
    import subprocess
    import sys

    data, _ = _two_steps(tmp_path, 6)
    ran = tmp_path / "atexit-ran"
    script = (
        "import atexit, os, signal, sys, time\n"
        "from pathlib import Path\n"
        "from triage.cli.app import main\n"
        "def late():\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, as the command ends\n"
        "    time.sleep(0.2)\n"
        f"    Path({str(ran)!r}).write_text('ran')\n"
        "atexit.register(late)\n"
        f"sys.argv = ['triage', 'summary', '--data', {str(data)!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "KeyboardInterrupt" not in done.stderr and done.stderr == "", done.stderr
    assert "series" in done.stdout and ran.read_text() == "ran"


def test_one_is_one_iteration_and_one_decision(tmp_path):
    """"1 steady iterations ->", "1 decisions written to", "(1 decisions)"."""
    import json

    path = tmp_path / "c1.json"
    path.write_text(json.dumps([{"benchmark": "org.acme.T.run", "mode": "avgt",
                                 "primaryMetric": {"scoreUnit": "ns/op", "rawData": [[5.0]]}}]))
    code, text = invoke(["steady", path, "--out", tmp_path / "s.csv"])
    assert code == 0 and "1 steady iteration -> " in flat(text), text
    code, text = invoke(["steady", path, "--out", tmp_path / "n.csv", "--trim-warmup", "none"])
    assert code == 0 and "1 iteration (none cut) -> " in flat(text), text


def test_a_model_fitted_on_a_handful_of_alerts_is_warned_about(tmp_path):
    """With --test-size 0 only "no hold-out" was said of an SVM fitted on 6 rows, 2 of them false."""
    rng = np.random.default_rng(4)
    rows = ["series_id,commit,value,label"]
    for s in range(4):
        for i in range(60):
            label = "true_positive" if i == 30 else "false_positive" if i == 12 and s < 2 else ""
            rows.append(f"s{s},c{i:03d},{100 + rng.standard_normal() + 8 * (i >= 30):.3f},{label}")
    data = tmp_path / "h.csv"
    data.write_text("\n".join(rows) + "\n")
    code, text = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track", "--test-size", "0"])
    assert code == 0, text
    assert ("the model was fitted on 4 true and 2 false alerts (fewer than 10 of a class): it has seen too few "
            "to tell them apart") in flat(text), text


def test_scoring_without_a_threshold_takes_the_detectors_own(tmp_path):
    """The demo scored perfherder's alerts at the model's general threshold (0.0175, hybrid_ks's), so
    alerts at P(true) 0.12 and 0.26 were called true where `triage score` (perfherder's 0.269) did not."""
    from triage.candidate_files import read_candidates
    from triage.cli.demo import DEMO_SEED, unlabelled
    from triage.detectors import make
    from triage.inference import load_classifier
    from triage.model_lookup import resolve_model
    from triage.scoring import default_threshold, score_candidates
    from triage.synthetic import generate

    dataset = generate("small", seed=DEMO_SEED)
    clf = load_classifier(resolve_model("default", "scoring"))
    rows = [(h.series_id, h.commits[c.index], c.index, "perfherder") for h in dataset
            for c in make("perfherder").detect(h.values)]
    pd.DataFrame(rows, columns=["series_id", "commit", "index", "detector"]).to_csv(tmp_path / "c.csv", index=False)
    table = read_candidates(tmp_path / "c.csv")
    cut, how = default_threshold(clf, table)
    assert "perfherder" in how and cut > clf.threshold_
    plain = unlabelled(dataset)
    scored = score_candidates(plain, table, clf)
    between = (scored["p_true"] >= clf.threshold_) & (scored["p_true"] < cut)
    assert between.any()  # alerts the general threshold would call true
    assert (scored.loc[between, "classification"] == "false_positive").all()
    assert scored.equals(score_candidates(plain, table, clf, threshold=cut))


def test_whole_number_parameters_given_as_floats_work_as_their_ints():
    """make("perfherder", min_back_window=12.0) passed the range check and failed in the search:
    "slice indices must be integers" (JSON and DataFrame rows give 12.0)."""
    from triage.detectors import defaults, make, names
    from triage.steady_state import CPSSD, KBKSSD

    rng = np.random.default_rng(0)
    x = np.r_[rng.standard_normal(100), rng.standard_normal(100) + 5]
    for name in names():
        floats = {k: float(v) for k, v in defaults(name).items() if isinstance(v, int) and not isinstance(v, bool)}
        assert floats, name
        detector = make(name, **floats)
        assert [c.index for c in detector.detect(x)] == [c.index for c in make(name).detect(x)], name
        assert all(type(getattr(detector, k)) is int for k in floats), name
    run = np.r_[np.linspace(10, 1, 40), np.ones(200)] + rng.standard_normal(240) * 0.1
    assert CPSSD(n_boot=10.0).fit(run).start_ == CPSSD(n_boot=10).fit(run).start_
    assert KBKSSD(short_kernel=15.0).fit(run).start_ == KBKSSD(short_kernel=15).fit(run).start_
    with pytest.raises(ValueError, match=r"min_back_window=12.5 of detector 'perfherder' must be a whole number"):
        make("perfherder", min_back_window=12.5)


def test_an_online_loop_of_a_classifier_without_a_manifest_says_it_decides_on_arrival():
    """A classifier fitted in Python on window-4 rows ran at K = 0 without a word."""
    import warnings

    from triage.features.extract import extract_features
    from triage.online.loop import OnlineTriage
    from triage.synthetic import generate
    from triage.training.classifier import TriageClassifier

    dataset = generate("small", seed=3)
    clf = TriageClassifier(model="rf", n_estimators=5).fit(extract_features(dataset, window=4))
    with pytest.warns(UserWarning, match=r"the classifier records no window .* give confirm_after=K for a model "
                                         r"fitted on window-K rows"):
        assert OnlineTriage(clf).confirm_after == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert OnlineTriage(clf, confirm_after=4).confirm_after == 4


def test_a_misspelt_xgboost_parameter_is_refused_and_its_own_are_taken(tmp_path):
    """`train --model xgb --param n_estimator=10` trained the default 400 trees, XGBoost only printing
    'Parameters: { "n_estimator" } are not used.' (rf and svm refuse a misspelt name themselves)."""
    from triage.training.classifier import TriageClassifier

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((40, 3)), np.r_[np.zeros(20), np.ones(20)].astype(int)
    with pytest.raises(TypeError, match=r"unknown parameter 'n_estimator' for XGBoost \(did you mean 'n_estimators'\?\)"):
        TriageClassifier(model="xgb", n_estimator=10).fit(X, y)
    TriageClassifier(model="xgb", n_estimators=5, gamma=0.1, max_bin=64).fit(X, y)  # the booster's own names pass
    code, text = invoke(["train", "--preset", "small", "--out", tmp_path / "m", "--no-track", "--model", "xgb",
                         "--param", "n_estimator=10"])
    assert code == 2 and "Invalid value for --param: xgb: unknown parameter 'n_estimator'" in flat(text), text


def test_one_evaluation_split_shows_no_interval(tmp_path):
    """`evaluate --splits 1` printed "0.700–0.700", an interval known exactly, from one split."""
    from triage.loaders import write_long
    from triage.synthetic import generate

    data = write_long(generate("small", seed=3), tmp_path / "h.csv")
    code, text = invoke(["evaluate", "--data", data, "--splits", "1", "--models", "rf", "--out", tmp_path / "ev",
                         "--no-track"])
    assert code == 0, text
    assert "no interval from one split" in flat(text) and "–" not in text, text


def test_the_online_loop_loads_a_bundled_model_by_its_name(tmp_path, monkeypatch):
    """`--model online-w4` works on the command line; from Python it was "no such model directory"."""
    from triage.online.loop import OnlineTriage

    monkeypatch.chdir(tmp_path)
    loop = OnlineTriage.from_model_dir("online-w4")
    assert (loop.confirm_after, loop.threshold) == (4, 0.98)
    (tmp_path / "online-w4").mkdir()  # a folder of that name here is what the name means
    with pytest.raises(Exception, match="online-w4"):
        OnlineTriage.from_model_dir("online-w4")


def test_an_ensembles_members_may_be_one_comma_separated_string():
    """make("ensemble", members="perfherder") read its letters as nine unknown detectors."""
    from triage.detectors import make

    assert make("ensemble", members="perfherder, pelt,binseg", min_votes=2).members == ("perfherder", "pelt", "binseg")
    with pytest.raises(ValueError, match=r"'nope' is not a detector"):
        make("ensemble", members="perfherder,nope")


@pytest.mark.parametrize("given", ['{"s": {}}', [1, 2]])
def test_a_state_that_is_no_mapping_is_a_value_error(given):
    """load_state_dict promises ValueError; a JSON string or a list met "'str' object has no attribute 'items'"."""
    from triage.online.loop import OnlineTriage

    loop = OnlineTriage.from_model_dir("online-w4")
    with pytest.raises(ValueError, match="a state is a mapping of series id to series state"):
        loop.load_state_dict(given)


@pytest.mark.parametrize("seed", [1.5, -1, True])
def test_a_synthetic_seed_that_is_no_whole_number_is_named(seed):
    """numpy's "SeedSequence expects int or sequence of ints" named no argument."""
    from triage.synthetic import generate

    with pytest.raises(ValueError, match=rf"seed must be a whole number >= 0, got {seed!r}"):
        generate("small", seed=seed)
