"""Bad input to the warm-up trimming surfaces: ``triage steady``, ``triage convert --trim-warmup``, the detectors.

Each test pins a defect found by feeding them small hostile files: one clear
line and exit 2 for bad input, nothing stored overwritten, outputs that hold
only their content, detectors that never crash on a short or constant run.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.cli.app import app
from triage.core.errors import InputError
from triage.readers.jmh import read_jmh, steady_long
from triage.steady_state import CPSSD, KBKSSD, KernelStepSSD
from triage.steady_state.base import as_run
from triage.steady_state.cpssd import _boot_means

TRIAGE = Path(sys.executable).parent / "triage"


def _runs(path: Path, n: int = 120, runs: int = 2) -> Path:
    """A JSON array of runs: times that fall to their steady level."""
    rng = np.random.default_rng(0)
    data = []
    for _ in range(runs):
        x = 1.0 + 0.01 * rng.standard_normal(n)
        x[: n // 5] += 0.5
        data.append([round(float(v), 6) for v in x])
    path.write_text(json.dumps(data))
    return path


def _entry(
    benchmark: str, forks: list, mode: str = "avgt", params: dict | None = None, hist: bool = False
) -> dict:
    metric: dict = {"score": 1.0, "scoreUnit": "us/op"}
    metric["rawDataHistogram" if hist else "rawData"] = forks
    entry = {"benchmark": benchmark, "mode": mode, "primaryMetric": metric}
    if params is not None:
        entry["params"] = params
    return entry


def _invoke(args: list[object]):
    return CliRunner().invoke(app, [str(a) for a in args])


# --------------------------------------------------------------------------- outputs


def test_steady_out_dash_writes_only_the_csv_to_stdout(tmp_path):
    runs = _runs(tmp_path / "c1.json")
    res = _invoke(["steady", runs, "--out", "-"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "series_id,commit,fork,value"
    assert all(line.count(",") == 3 for line in lines), res.stdout  # no table in the CSV
    assert "Steady-state starts" in res.stderr


def test_steady_out_and_starts_both_on_stdout_are_refused(tmp_path):
    runs = _runs(tmp_path / "c1.json")
    res = _invoke(["steady", runs, "--out", "-", "--starts", "-"])
    assert res.exit_code == 2 and "--starts" in res.output, res.output


@pytest.mark.skipif(
    not TRIAGE.exists(), reason="the triage script is not installed beside this Python"
)
@pytest.mark.parametrize("command", ["steady", "convert"])
def test_out_dev_stdout_in_a_pipe_holds_only_the_csv(tmp_path, command):
    runs = _runs(tmp_path / "c1.json")
    if command == "steady":
        args = ["steady", str(runs), "--out", "/dev/stdout"]
    else:
        long = tmp_path / "long.csv"
        pd.DataFrame(
            {
                "series_id": "s",
                "commit": np.repeat(["a", "b"], 60),
                "value": np.r_[np.full(10, 2.0), np.ones(50), np.full(10, 2.0), np.ones(50)],
            }
        ).to_csv(long, index=False)
        args = ["convert", "--data", str(long), "--out", "/dev/stdout", "--trim-warmup", "kbkssd"]
    done = subprocess.run([*warm_triage(str(TRIAGE)), *args], capture_output=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    header = text.splitlines()[0]
    assert all(line.count(",") == header.count(",") for line in text.splitlines()), text


@pytest.mark.parametrize("starts", ["dir", "file/below.csv"])
def test_steady_checks_both_outputs_before_writing_either(tmp_path, starts):
    runs = _runs(tmp_path / "c1.json")
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x\n")
    out = tmp_path / "kept.csv"
    out.write_text("stored before\n")
    res = _invoke(["steady", runs, "--out", out, "--starts", tmp_path / starts])
    # Refused when the options are parsed (0e91f3e) or by the command: exit 2 either way.
    assert res.exit_code == 2
    said = res.output + (str(res.exception) if isinstance(res.exception, InputError) else "")
    assert starts.split("/")[0] in said
    assert out.read_text() == "stored before\n"


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("commits", ["x,", ",x", "x, ,y"])
def test_steady_refuses_an_empty_commit_id(tmp_path, commits):
    files = [_runs(tmp_path / f"c{i}.json") for i in range(len(commits.split(",")))]
    out = tmp_path / "long.csv"
    res = _invoke(["steady", *files, "--out", out, "--commits", commits])
    assert res.exit_code == 2 and "--commits" in res.output and "empty" in res.output, res.output
    assert not out.exists()


def test_steady_duplicate_commit_names_the_files(tmp_path):
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    a, b = _runs(tmp_path / "d1" / "same.json"), _runs(tmp_path / "d2" / "same.json")
    res = _invoke(["steady", a, b, "--out", tmp_path / "o.csv"])
    text = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and "'same'" in text and "--commits" in text, res.output
    mismatch = _invoke(["steady", a, b, "--out", tmp_path / "o.csv", "--commits", "x"])
    assert mismatch.exit_code == 2 and "--commits" in mismatch.output, mismatch.output


def test_convert_refuses_an_unknown_trim_method_as_an_option_error(tmp_path):
    long = tmp_path / "long.csv"
    pd.DataFrame({"series_id": "s", "commit": ["a", "a", "b"], "value": [1.0, 2.0, 3.0]}).to_csv(
        long, index=False
    )
    res = _invoke(
        ["convert", "--data", long, "--out", tmp_path / "o.csv", "--trim-warmup", "magic"]
    )
    assert res.exit_code == 2 and "--trim-warmup" in res.output, (res.output, res.exception)
    res = _invoke(["convert", "--data", long, "--out", tmp_path / "o.csv", "--aggregate", "p50"])
    assert res.exit_code == 2 and "--aggregate" in res.output, (res.output, res.exception)
    ok = _invoke(
        ["convert", "--data", long, "--out", tmp_path / "o.csv", "--trim-warmup", "KBKSSD"]
    )
    assert ok.exit_code == 0, ok.output  # the names are read as make() reads them


# --------------------------------------------------------------------------- the JMH reader


def test_steady_reads_a_gzip_file_like_the_plain_one(tmp_path):
    plain = _runs(tmp_path / "c1.json")
    packed = tmp_path / "packed" / "c1.json.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    outs = []
    for i, path in enumerate((plain, packed)):
        out = tmp_path / f"o{i}.csv"
        res = _invoke(["steady", path, "--out", out])
        assert res.exit_code == 0, (res.output, res.exception)
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    assert set(outs[1]["commit"]) == {"c1"}


def test_a_benchmark_twice_in_one_mode_is_refused_not_merged_into_one_fork(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            [
                _entry("a.B.m", [[1.0, 2.0]], params={"n": "1"}),
                _entry("a.B.m", [[3.0, 4.0]], params={"n": "1"}),
            ]
        )
    )
    with pytest.raises(InputError) as err:
        read_jmh(path)
    assert err.value.row == 2 and "a.B.m[n=1]" in str(err.value) and "row 1" in str(err.value), str(
        err.value
    )


def test_a_benchmark_in_two_modes_is_two_series_each_trimmed_its_own_way(tmp_path):
    # JMH -bm thrpt,avgt: one entry per mode. A rate and a time are never one run.
    rng = np.random.default_rng(5)
    rate = 1000 + rng.standard_normal(400) * 5
    rate[:60] -= 300  # slower while warming up: fewer operations per second
    time = 1.0 + rng.standard_normal(400) * 0.005
    time[:80] += 0.3  # more time per operation while warming up
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            [
                _entry("a.B.m", [rate.tolist()], mode="thrpt"),
                _entry("a.B.m", [time.tolist()], mode="avgt"),
                _entry("a.B.other", [[1.0, 2.0]]),
            ]
        )
    )
    frame = read_jmh(path)
    assert list(frame["series_id"].unique()) == ["a.B.m:thrpt", "a.B.m:avgt", "a.B.other"]
    _, starts = steady_long([path], trim_warmup="kbkssd")
    got = dict(zip(starts["series_id"], starts["steady_start"], strict=True))
    assert abs(got["a.B.m:thrpt"] - 60) <= 3 and abs(got["a.B.m:avgt"] - 80) <= 3, got


def test_a_compressed_file_error_names_the_file_not_its_copy(tmp_path):
    path = tmp_path / "runs.json.gz"
    path.write_bytes(gzip.compress(json.dumps([[1.0, 2.0], [1.0, "x"]]).encode()))
    with pytest.raises(InputError) as err:
        steady_long([path], trim_warmup="none")
    assert err.value.source == str(path) and err.value.row == 2, str(err.value)


def test_a_flat_array_of_numbers_is_named_as_such(tmp_path):
    path = tmp_path / "flat.json"
    path.write_text("[0.9, 0.5, 0.5]")
    with pytest.raises(InputError) as err:
        read_jmh(path)
    assert err.value.row == 1 and "array of runs" in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("hist", "message"),
    [
        ([[[[10.0, 1], [20.0, -1]]]], "count"),  # a negative count
        ([[[[10.0, 2], [20.0, -1]]]], "count"),  # ... whose total is still positive
        ([[[[10.0, 0], [20.0, 0]]]], "count"),  # no counts at all
        ([[[[True, 1]]]], "not a number"),  # true is not a value
        ([[[10.0, 1, 20.0, 3]]], "pairs"),  # flat numbers, not pairs
        ([[[10.0, 1]]], "pairs"),  # a pair where a list of pairs belongs
        ([[[[[10.0, 1]]]]], "pairs"),  # nested one level too deep
        ([[[]]], "pairs"),  # an iteration without pairs
        ([[[[float("nan"), 1]]]], "finite"),
        ([[[[1e99, 1e300], [1.0, 1e300]]]], "count: value 1e+300 is outside the usable range"),
        ([[[[1.0, 10**400]]]], "count: value"),
    ],
)
def test_bad_histograms_are_located_errors(tmp_path, hist, message):
    path = tmp_path / "h.json"
    path.write_text(json.dumps([_entry("a.B.m", hist, mode="sample", hist=True)]))
    with pytest.raises(InputError) as err:
        read_jmh(path)
    assert err.value.row == 1 and message in str(err.value), str(err.value)


def test_a_good_histogram_gives_count_weighted_means_without_warnings(tmp_path):
    path = tmp_path / "h.json"
    path.write_text(
        json.dumps(
            [
                _entry(
                    "a.B.m", [[[[1e99, 1e99], [2e99, 3e99]], [[5.0, 2]]]], mode="sample", hist=True
                )
            ]
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # value x count at the ends of the usable range
        assert read_jmh(path)["value"].tolist() == pytest.approx([1.75e99, 5.0])


# --------------------------------------------------------------------------- the detectors


@pytest.mark.parametrize("cls", [KBKSSD, CPSSD, KernelStepSSD])
@pytest.mark.parametrize(
    "run", [[], [1.0], [0.5, 0.4], [0.5, 0.4, 0.3], [1.0] * 40, [0.0] * 300, [-2.0] * 7]
)
def test_short_and_constant_runs_give_a_start_or_none(cls, run):
    start = cls().fit(np.array(run)).start_
    assert start is None or 0 <= start < max(len(run), 1)


def test_as_run_refuses_what_is_not_one_run():
    with pytest.raises(ValueError, match="one-dimensional"):
        as_run([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="one-dimensional"):
        as_run(5.0)
    assert as_run([[1.0], [2.0]]).tolist() == [1.0, 2.0]  # a column is one run


@pytest.mark.parametrize("cls", [KBKSSD, CPSSD, KernelStepSSD])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_detectors_are_scale_free_over_the_usable_range(cls, seed):
    # Times in seconds per operation are ~1e-8; JMH accepts any unit, the readers 1e-100 .. 1e100.
    rng = np.random.default_rng(seed)
    x = 1.0 + 0.01 * rng.standard_normal(400)
    x[:60] += np.linspace(0.3, 0.0, 60)
    x[-40:] += 0.02 * seed  # a late shift for the windowed test to judge (none for seed 0)
    base = cls().fit(x).start_
    assert base is not None or seed
    for scale in (1e-99, 1e-12, 1e-8, 1e99):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # scipy's overflow in Welch's degrees of freedom
            assert cls().fit(x * scale).start_ == base, scale


def test_cpssd_bootstrap_is_unchanged_and_bounded_in_memory():
    x = np.random.default_rng(0).standard_normal(40_000)
    want = x[np.random.default_rng(7).integers(0, len(x), size=(200, len(x)))].mean(axis=1)
    assert np.array_equal(_boot_means(x, 200, np.random.default_rng(7)), want)
    tracemalloc.start()
    try:
        _boot_means(x, 1000, np.random.default_rng(7))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100e6, f"{peak / 1e6:.0f} MB"  # 1000 x 40,000 at once is 640 MB


def test_arrays_of_runs_make_a_history_of_one_series_with_series(tmp_path):
    rng = np.random.default_rng(9)
    files = []
    for c in ("c1", "c2", "c3"):
        x = 0.5 + rng.standard_normal(300) * 0.005
        x[:50] += 0.1
        path = tmp_path / f"{c}.json"
        path.write_text(json.dumps([x.tolist(), x[::-1].tolist()[::-1]]))
        files.append(str(path))
    out = tmp_path / "long.csv"
    res = CliRunner().invoke(app, ["steady", *files, "--out", str(out), "--series", "parse"])
    assert res.exit_code == 0, res.output
    long = pd.read_csv(out)
    assert set(long["series_id"]) == {"parse"} and list(long["commit"].unique()) == [
        "c1",
        "c2",
        "c3",
    ]
    # without --series each file is its own one-commit series
    res = CliRunner().invoke(app, ["steady", *files, "--out", str(out)])
    assert res.exit_code == 0 and set(pd.read_csv(out)["series_id"]) == {"c1", "c2", "c3"}
    bad = CliRunner().invoke(
        app, ["steady", *files, "--out", str(tmp_path / "x.csv"), "--series", " "]
    )
    assert bad.exit_code == 2 and "series" in bad.output and not (tmp_path / "x.csv").exists()
