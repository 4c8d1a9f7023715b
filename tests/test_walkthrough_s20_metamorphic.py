"""Walkthrough s20: metamorphic relations between two runs of ``triage`` on related inputs.

Seven real histories of ../shared/data/real (one to two per source project,
one of them ``rhai``'s with re-runs measured later) are transformed the way a
performance engineer's data changes between two runs: the series' order in
the file, which other series share the file, the unit (x 1000, x 1e-9), the
series and commit ids, the file format (gzip, JSON lines, Parquet, Otava CSV,
a JSON list, the MongoDB layout), rows interleaved across series, the
candidate file's form and row order, a stream fed to ``watch`` in one go or in
two parts, a history cut short. Each test asserts that the per-series results
of ``candidates``, ``score``, ``label``, ``detect`` and ``watch`` are the same
(bit for bit where the code is deterministic), or differ only where the
README says a result depends on the whole file.

Relations that hold: everything below but the last test.

Documented dependences on the whole file (checked as such):

- ``score`` ranks a candidate's detector ``score`` within the file
  (README, "Scoring a detector's fresh alerts": "the candidate's score
  ranked within the file"): split a candidate file in two and some P(true)
  move (by up to 0.06 here), never the calls; without a ``score`` column the
  two halves give the same numbers as the whole.
- ``watch`` without ``--state`` remembers only a series' latest commit and
  the K waiting ones: a re-run of an older commit prints nothing, where with
  ``--state`` it prints its first decision again, marked ``replayed``
  (README, "Online loop"): 9 of the 13 ``rhai`` re-runs here. Every other
  line is the same.

Defects found, left for the lead (the modules may not be edited here):

1. ``triage/core/history.py`` (``dataset_from_long``): with ``--sort-timestamps`` a commit measured several times
takes the timestamp of its *first row in the file*, not its earliest, so the
order of the sorted history depends on the order of the rows:

    series_id,commit,timestamp,value
    s,a,2024-01-01T12:00:00,1.2     <- a re-run of a, listed first
    s,b,2024-01-01T11:00:00,2.0
    s,a,2024-01-01T10:00:00,1.0

sorts to ``b, a`` (a at 12:00), while the same three rows in time order give
``a, b`` (a at 10:00). On the real ``rhai`` series, a shuffled file sorted
by ``convert --sort-timestamps`` swaps commits 557b368 and 43a6aca against
the original. ``test_sort_timestamps_does_not_depend_on_row_order`` is an
expected failure until it is fixed.

2. ``features/matrix.py`` (``training_data``) / ``training/pipeline.py``
(``train``): the rows are fitted in the file's order, so the same labelled
history with its series in another order gives another model (a random
forest's bootstrap draws row positions): on the ``small`` synthetic preset,
series reversed, ``train --test-size 0`` then ``label --which all`` on the
same file: P(true) up to 0.11 apart (held-out AUC 0.537 vs 0.450 with the
default hold-out, which holds out the same series). Relabelling commits in
the same order changes nothing. ``test_train_does_not_depend_on_the_order_of_the_series``
is an expected failure until it is fixed.

Not a defect, noted: values scaled by a factor that is not a power of two
(bytes to kB) are rounded, and a characteristic with a discontinuity moves
where a value sits exactly on it: ``flat_spots`` bins a window into ten
equal-width bins (pandas.cut, as tsfeatures), and emg3d's peak memory,
multiples of 4096 bytes, put one After value on a bin edge: ``after_flat_spots``
2 in bytes, 1 in MB, P(true) 0.0419 vs 0.0404 (``watch``, commit cbff118;
no decision changes). x 2**-10 (KiB) gives the same lines bit for bit.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import invoke

SERIES = [
    "django-asv/query_benchmarks.query_utils_q_create.benchmark.QCreate.time_create_args_only/ubuntu-latest/conda-py3.12",
    "django-asv/query_benchmarks.query_utils_q_create.benchmark.QCreate.time_create_large/ubuntu-latest/conda-py3.12",
    "empymod-bench/transform.Dlf.time_dlf('Big';'Lagged')/dtr-latitude/conda-py3.6",
    "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads1({logSize:LARGE})/otel-bench-runner",
    "emg3d-bench/memory.ResidualMemory.peakmem_residual('big')/meerkat/conda-py3.8",
    "emg3d-bench/memory.ResidualMemory.peakmem_residual('small')/meerkat/conda-py3.8",
    "rhai/bench_eval_deeply_nested/gha-ubuntu-latest",
]
RHAI = SERIES[-1]
DETECTORS = ("perfherder", "binseg", "edivisive")


# --------------------------------------------------------------------------- helpers


def cli(args: list[object], stdin: str | None = None) -> str:
    code, out = invoke(args, stdin=stdin)
    assert code == 0, f"triage {' '.join(map(str, args))} -> {code}: {out[-1500:]}"
    return out


def table(path: Path) -> pd.DataFrame:
    """An output CSV with the ids read as text, sorted by (series, commit)."""
    frame = pd.read_csv(
        path, dtype={"series_id": str, "commit": str}, keep_default_na=False, na_values=[""]
    )
    return frame.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True)


def write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def halves(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    first = frame.series_id.isin(SERIES[::2])
    return frame[first], frame[~first]


def per_series_cut(frame: pd.DataFrame, fraction: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each series' first ``fraction`` of rows, and the rest."""
    k = frame.groupby("series_id", sort=False).cumcount()
    n = frame.groupby("series_id", sort=False).series_id.transform("size")
    head = k < (n * fraction).astype(int)
    return frame[head], frame[~head]


def renamed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["series_id"] = "X" + out.series_id.str[::-1]
    out["commit"] = "k" + out.commit
    return out


def named_back(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["series_id"] = out.series_id.str[1:].str[::-1]
    out["commit"] = out.commit.str[1:]
    return out.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True)


def candidates(data: Path, detector: str, out: Path, *extra: object) -> pd.DataFrame:
    cli(["candidates", "--data", data, "--detector", detector, "--out", out, *extra])
    return table(out)


def score(
    data: Path, cands: Path | str, out: Path, *extra: object, stdin: str | None = None
) -> pd.DataFrame:
    cli(
        ["score", "--data", data, "--candidates", cands, "--out", out, "--show", "0", *extra],
        stdin=stdin,
    )
    return table(out)


def detect(data: Path | str, out: Path, *extra: object, stdin: str | None = None) -> pd.DataFrame:
    cli(["detect", "--data", data, "--out", out, *extra], stdin=stdin)
    return table(out)


def label(data: Path, out: Path, *extra: object) -> pd.DataFrame:
    cli(["label", "--data", data, "--out", out, "--show", "0", *extra])
    return table(out)


def jsonl(frame: pd.DataFrame) -> str:
    return "".join(
        json.dumps(
            {
                "series_id": r.series_id,
                "commit": r.commit,
                "value": r.value,
                "timestamp": r.timestamp,
            }
        )
        + "\n"
        for r in frame.itertuples()
    )


def watch(args: list[object], stdin: str | None = None) -> list[dict]:
    out = cli(["watch", *args], stdin=stdin)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def lines_of(records: list[dict]) -> list[tuple]:
    return sorted(
        (
            r["series_id"],
            r["commit"],
            r.get("decided_at"),
            bool(r.get("withdrawn")),
            r.get("decision"),
            r.get("probability"),
            bool(r.get("replayed")),
        )
        for r in records
    )


def assert_same_scores(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert a[["series_id", "commit", "index"]].equals(b[["series_id", "commit", "index"]])
    np.testing.assert_array_equal(a.p_true.to_numpy(float), b.p_true.to_numpy(float))
    assert a.classification.tolist() == b.classification.tolist()


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("s20_meta")


@pytest.fixture(scope="module")
def base(real_frame: pd.DataFrame) -> pd.DataFrame:
    frame = real_frame[real_frame.series_id.isin(SERIES)].reset_index(drop=True)
    assert set(frame.series_id) == set(SERIES), (
        "the real histories no longer hold the chosen series"
    )
    assert frame[frame.series_id == RHAI].commit.duplicated().sum() > 0  # re-runs measured later
    return frame


@pytest.fixture(scope="module")
def files(base: pd.DataFrame, work: Path) -> dict[str, Path]:
    """The slice and its transforms, written once."""
    rev = pd.concat([base[base.series_id == s] for s in reversed(SERIES)])
    first, second = halves(base)
    scaled = base.assign(value=base.value * 1000.0)
    nano = base.assign(value=base.value * 1e-9)
    k = base.groupby("series_id", sort=False).cumcount()
    interleaved = base.assign(k=k).sort_values("k", kind="stable").drop(columns="k")
    paths = {
        "base": write(base, work / "base.csv"),
        "rev": write(rev, work / "rev.csv"),
        "h1": write(first, work / "h1.csv"),
        "h2": write(second, work / "h2.csv"),
        "x1000": write(scaled, work / "x1000.csv"),
        "x1e-9": write(nano, work / "x1e-9.csv"),
        "ren": write(renamed(base), work / "ren.csv"),
        "inter": write(interleaved, work / "inter.csv"),
        "jsonl": work / "base.jsonl",
        "gz": work / "base.csv.gz",
    }
    paths["jsonl"].write_text(jsonl(base))
    with gzip.open(paths["gz"], "wt") as f:
        base.to_csv(f, index=False)
    return paths


@pytest.fixture(scope="module")
def binseg(files: dict[str, Path], work: Path) -> dict[str, Path]:
    """``binseg``'s candidate files of the slice, its halves, and the slice in another unit."""
    out = {}
    for name in ("base", "h1", "h2", "x1000"):
        out[name] = work / f"binseg_{name}.csv"
        candidates(files[name], "binseg", out[name])
    return out


@pytest.fixture(scope="module")
def detected(files: dict[str, Path], work: Path) -> pd.DataFrame:
    """``detect``'s change points of the slice: the reference of the detect relations (read, never changed)."""
    return detect(files["base"], work / "d_a.csv")


@pytest.fixture(scope="module")
def scored(files: dict[str, Path], binseg: dict[str, Path], work: Path) -> pd.DataFrame:
    """``score`` of the slice's ``binseg`` candidates: the reference of the score relations (read, never changed)."""
    return score(files["base"], binseg["base"], work / "s_a.csv")


# --------------------------------------------------------------------------- candidates


def test_candidates_per_series_whatever_the_file(files: dict[str, Path], work: Path) -> None:
    """Each detector's candidates of a series: the same whatever the series' place in the file,
    the other series in it, the unit (x 1000, x 1e-9) and the ids."""
    cols = ["series_id", "commit", "index", "score"]
    for det in DETECTORS:
        a = candidates(files["base"], det, work / f"c_{det}.csv")
        assert len(a) > 0, det
        runs = {
            "reversed": candidates(files["rev"], det, work / f"c_{det}_rev.csv"),
            "split": pd.concat(
                [
                    candidates(files["h1"], det, work / f"c_{det}_h1.csv"),
                    candidates(files["h2"], det, work / f"c_{det}_h2.csv"),
                ]
            )
            .sort_values(["series_id", "commit"], kind="stable")
            .reset_index(drop=True),
            "renamed": named_back(candidates(files["ren"], det, work / f"c_{det}_ren.csv")),
        }
        for name, b in runs.items():
            assert a[cols].equals(b[cols]), (det, name)
        for unit in ("x1e-9",):  # x 1000: the binseg fixture, scored below
            b = candidates(files[unit], det, work / f"c_{det}_{unit}.csv")
            assert a[["series_id", "commit", "index"]].equals(
                b[["series_id", "commit", "index"]]
            ), (det, unit)
            # the detectors' scores are scale-free too (test statistics, z-scores, probabilities)
            np.testing.assert_allclose(b.score.to_numpy(float), a.score.to_numpy(float), rtol=1e-6)


def test_commit_order_file_restores_shuffled_rows(base: pd.DataFrame, work: Path) -> None:
    """Rows without timestamps in any order + ``--commit-order`` = the rows in history order."""
    plain = base.drop(columns=["timestamp"])
    order = work / "order.txt"
    order.write_text("\n".join(dict.fromkeys(plain.commit)) + "\n")
    a = candidates(write(plain, work / "nots.csv"), "binseg", work / "c_nots.csv")
    b = candidates(
        write(plain.sample(frac=1, random_state=5), work / "nots_shuf.csv"),
        "binseg",
        work / "c_nots_shuf.csv",
        "--commit-order",
        order,
    )
    assert a[["series_id", "commit", "index"]].equals(b[["series_id", "commit", "index"]])
    np.testing.assert_allclose(b.score.to_numpy(float), a.score.to_numpy(float), rtol=1e-12)


# --------------------------------------------------------------------------- score


def test_score_per_series_apart_from_the_documented_file_rank(
    binseg: dict[str, Path], files: dict[str, Path], work: Path, scored: pd.DataFrame
) -> None:
    """Split data and candidates in two files: without a ``score`` column every P(true) is the
    same; with it some move (the file-wide rank of the detector's score, documented) but no call."""
    whole = scored
    split = pd.concat(
        [
            score(files["h1"], binseg["h1"], work / "s_h1.csv"),
            score(files["h2"], binseg["h2"], work / "s_h2.csv"),
        ]
    )
    split = split.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True)
    assert whole[["series_id", "commit"]].equals(split[["series_id", "commit"]])
    moved = np.abs(whole.p_true.to_numpy(float) - split.p_true.to_numpy(float))
    assert 0 < np.nanmax(moved) < 0.1  # the rank among 79 candidates vs among each half's
    assert whole.classification.tolist() == split.classification.tolist()

    unranked = {}
    for name in ("base", "h1", "h2"):
        unranked[name] = work / f"binseg_{name}_noscore.csv"
        pd.read_csv(binseg[name], dtype=str).drop(columns=["score"]).to_csv(
            unranked[name], index=False
        )
    whole = score(files["base"], unranked["base"], work / "s_whole_n.csv")
    split = pd.concat(
        [
            score(files["h1"], unranked["h1"], work / "s_h1_n.csv"),
            score(files["h2"], unranked["h2"], work / "s_h2_n.csv"),
        ]
    )
    assert_same_scores(
        whole, split.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True)
    )


def test_score_invariant_to_order_unit_ids_and_candidate_file_form(
    base: pd.DataFrame,
    binseg: dict[str, Path],
    files: dict[str, Path],
    work: Path,
    scored: pd.DataFrame,
) -> None:
    """P(true) and the call of each candidate: the same with the series reversed, the values
    x 1000 (scale-free features, the detector run on the new unit), the ids renamed, the
    candidate rows shuffled, the candidates as JSON lines or on stdin, the data as JSON lines."""
    a = scored
    assert (a.classification == "true_positive").sum() > 0 and (
        a.classification == "false_positive"
    ).sum() > 0
    cands = pd.read_csv(binseg["base"], dtype={"commit": str})
    rev_c = write(
        pd.concat([cands[cands.series_id == s] for s in reversed(SERIES)]), work / "cands_rev.csv"
    )
    assert_same_scores(a, score(files["rev"], rev_c, work / "s_rev.csv"))
    assert_same_scores(a, score(files["x1000"], binseg["x1000"], work / "s_x1000.csv"))
    ren_c = write(renamed(cands), work / "cands_ren.csv")
    assert_same_scores(a, named_back(score(files["ren"], ren_c, work / "s_ren.csv")))
    shuf_c = write(cands.sample(frac=1, random_state=3), work / "cands_shuf.csv")
    assert_same_scores(a, score(files["base"], shuf_c, work / "s_shuf.csv"))
    json_c = work / "cands.jsonl"
    cli(
        [
            "candidates",
            "--data",
            files["base"],
            "--detector",
            "binseg",
            "--out",
            json_c,
            "--format",
            "json",
        ]
    )
    assert_same_scores(a, score(files["base"], json_c, work / "s_json.csv"))
    assert_same_scores(
        a, score(files["base"], "-", work / "s_stdin.csv", stdin=binseg["base"].read_text())
    )
    assert_same_scores(a, score(files["jsonl"], binseg["base"], work / "s_jsonl.csv"))


def test_score_threshold_calls_are_nested(
    binseg: dict[str, Path], files: dict[str, Path], work: Path
) -> None:
    """A higher ``--threshold`` calls a subset of the candidates true (duplicate suppression included)."""
    called = []
    for t in (0.05, 0.3, 0.8):
        s = score(files["base"], binseg["base"], work / f"s_t{t}.csv", "--threshold", t)
        called.append(
            set(
                s.commit[s.classification == "true_positive"]
                + "@"
                + s.series_id[s.classification == "true_positive"]
            )
        )
    assert len(called[0]) > len(called[-1])
    for lower, higher in zip(called, called[1:], strict=False):
        assert higher <= lower


# --------------------------------------------------------------------------- label


def test_label_per_series_unit_ids_and_label_spellings(
    base: pd.DataFrame, binseg: dict[str, Path], work: Path
) -> None:
    """``label`` on a half-triaged history: each alert's P(true) the same with the series split
    over two files, reversed, x 1e-3, renamed, with Perfherder's status names or codes, with more
    false alerts triaged elsewhere, and with its untriaged alerts under investigation."""
    cands = pd.read_csv(binseg["base"], dtype={"commit": str})
    status = np.random.default_rng(0).choice(
        ["true_positive", "false_positive", "not_triaged"], size=len(cands), p=[0.3, 0.3, 0.4]
    )
    of = dict(zip(zip(cands.series_id, cands.commit, strict=True), status, strict=True))
    lab = base.assign(label=[of.get(k, "") for k in zip(base.series_id, base.commit, strict=True)])
    a = label(write(lab, work / "L.csv"), work / "l_a.csv")
    assert len(a) == (status == "not_triaged").sum() > 10

    def same(b: pd.DataFrame) -> None:
        assert a[["series_id", "commit"]].equals(b[["series_id", "commit"]])
        np.testing.assert_array_equal(a.p_true.to_numpy(float), b.p_true.to_numpy(float))
        assert a.classification.tolist() == b.classification.tolist()

    first, second = halves(lab)
    split = pd.concat(
        [
            label(write(first, work / "L1.csv"), work / "l_1.csv"),
            label(write(second, work / "L2.csv"), work / "l_2.csv"),
        ]
    )
    same(split.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True))
    same(
        label(
            write(pd.concat([lab[lab.series_id == s] for s in reversed(SERIES)]), work / "Lr.csv"),
            work / "l_r.csv",
        )
    )
    same(label(write(lab.assign(value=lab.value * 1e-3), work / "Ls.csv"), work / "l_s.csv"))
    same(named_back(label(write(renamed(lab), work / "Ln.csv"), work / "l_n.csv")))
    names = {
        "true_positive": "fixed",
        "false_positive": "invalid",
        "not_triaged": "untriaged",
        "": "",
    }
    same(label(write(lab.assign(label=lab.label.map(names)), work / "Lp.csv"), work / "l_p.csv"))
    codes = {"true_positive": "7", "false_positive": "3", "not_triaged": "0", "": ""}
    same(label(write(lab.assign(label=lab.label.map(codes)), work / "Lc.csv"), work / "l_c.csv"))
    # Pre and After reach to the neighbouring alerts triaged *true*: false alerts added elsewhere and
    # untriaged ones spelt under_investigation change nothing
    rows = np.flatnonzero((lab.label == "").to_numpy() & (np.arange(len(lab)) % 37 == 0))
    more_false = lab.copy()
    more_false.iloc[rows, more_false.columns.get_loc("label")] = "false_positive"
    assert len(rows) > 30
    same(label(write(more_false, work / "Lf.csv"), work / "l_f.csv"))
    investigating = lab.assign(label=lab.label.replace("not_triaged", "under_investigation"))
    same(label(write(investigating, work / "Lu.csv"), work / "l_u.csv"))


# --------------------------------------------------------------------------- detect and watch


def test_detect_per_series_whatever_the_file(
    files: dict[str, Path], work: Path, detected: pd.DataFrame
) -> None:
    """``detect``'s change points and probabilities: the same with the series reversed, split over two
    files, interleaved row by row, x 1e-9, renamed, gzip, JSON lines, ``--jobs 2``, ``--batch-series 1``."""
    a = detected
    assert len(a) >= 10 and a.series_id.nunique() >= 4
    split = pd.concat(
        [detect(files["h1"], work / "d_h1.csv"), detect(files["h2"], work / "d_h2.csv")]
    )
    runs = {
        "reversed": detect(files["rev"], work / "d_rev.csv"),
        "split": split.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True),
        "interleaved": detect(files["inter"], work / "d_inter.csv"),
        "x1e-9": detect(files["x1e-9"], work / "d_x1e-9.csv"),
        "renamed": named_back(detect(files["ren"], work / "d_ren.csv")),
        "gzip": detect(files["gz"], work / "d_gz.csv"),
        "jsonl": detect(files["jsonl"], work / "d_jsonl.csv"),
        "jobs2": detect(files["base"], work / "d_j2.csv", "--jobs", "2"),
        "batch1": detect(files["base"], work / "d_b1.csv", "--batch-series", "1"),
    }
    levels = ["before", "after"]
    for name, b in runs.items():
        if name == "x1e-9":  # the alarms' levels are in the series' units; the rest unchanged
            assert np.allclose(b[levels].to_numpy(), 1e-9 * a[levels].to_numpy(), rtol=1e-12, atol=0), name
            a, b = a.drop(columns=levels), b.drop(columns=levels)
        assert a.equals(b), name
        a = detected


def test_detect_on_a_prefix_is_the_full_run_cut_short(
    base: pd.DataFrame, work: Path, detected: pd.DataFrame
) -> None:
    """Online means causal: on each series' first 60 %, ``detect`` finds exactly the change points
    of the full run that were decided (K = 4 commits later) before the cut."""
    head, _ = per_series_cut(base, 0.6)
    full = detected  # detect on the whole slice
    cut = detect(write(head, work / "phead.csv"), work / "d_phead.csv")
    # the rhai re-runs make "row count" and "commit count" differ: count distinct commits
    n_commits = head.drop_duplicates(["series_id", "commit"]).groupby("series_id").size()
    early = full[full["index"] < full.series_id.map(n_commits) - 4].reset_index(drop=True)
    assert len(early) >= 5
    assert early.equals(cut)


def test_watch_in_two_parts_with_state_equals_one_go_and_detect(
    base: pd.DataFrame, work: Path
) -> None:
    """``watch --state``: the stream in one go = the stream cut in each series' middle and fed in
    two runs (re-runs of ``rhai`` included); ``--csv`` = JSON lines; without ``--state`` the same
    lines but the documented ``replayed`` ones; its alarms are ``detect``'s change points."""
    stream = base[base.series_id.isin([SERIES[3], SERIES[4], RHAI])]
    one = watch(["--state", work / "w_one.db"], jsonl(stream))
    first, second = per_series_cut(stream, 0.5)
    two = watch(["--state", work / "w_two.db"], jsonl(first)) + watch(
        ["--state", work / "w_two.db"], jsonl(second)
    )
    assert len(one) > 500
    assert lines_of(one) == lines_of(two)
    csv = watch(["--csv", write(stream, work / "w.csv"), "--state", work / "w_csv.db"])
    assert lines_of(one) == lines_of(csv)
    # bytes -> KiB (x 2**-10, exact in binary): the same lines bit for bit
    kib = watch(["--state", work / "w_kib.db"], jsonl(stream.assign(value=stream.value / 1024.0)))
    assert lines_of(one) == lines_of(kib)
    # bytes -> kB (x 1e-3, rounded): the same decisions; a probability may move in its last digits, and
    # by 4e-4 on one commit of emg3d's peak memory, whose values are multiples of 4096 bytes: one of its
    # After values sits on a decile edge of ``flat_spots`` (pandas.cut's bins), which rounding moves
    kb = watch(["--state", work / "w_kb.db"], jsonl(stream.assign(value=stream.value * 1e-3)))
    assert [x[:5] for x in lines_of(one)] == [x[:5] for x in lines_of(kb)]
    # (None: a commit held back by the stream rule, the model not asked: the same commits both ways)
    moved = np.abs(np.array([x[5] for x in lines_of(one)], dtype=float)
                   - np.array([x[5] for x in lines_of(kb)], dtype=float))
    moved = moved[~np.isnan(moved)]
    assert moved.max() < 0.01
    # the series interleaved, fed in 8 runs of the command, one series' state cached at a time
    k = stream.groupby("series_id", sort=False).cumcount()
    mixed = jsonl(stream.assign(k=k).sort_values("k", kind="stable")).splitlines(keepends=True)
    step = len(mixed) // 8 + 1
    restarted = [
        r
        for i in range(0, len(mixed), step)
        for r in watch(
            ["--state", work / "w_restart.db", "--cache-series", "1"], "".join(mixed[i : i + step])
        )
    ]
    assert lines_of(one) == lines_of(restarted)
    memory = watch([], jsonl(stream))
    # rhai re-sends commits already decided: with --state each re-run prints its first decision again;
    # in memory only a re-run of the latest commit does (README: only the latest and the K waiting are kept)
    assert sum(bool(r.get("replayed")) for r in one) == 13
    assert sum(bool(r.get("replayed")) for r in memory) == 9
    assert lines_of([r for r in memory if not r.get("replayed")]) == lines_of(
        [r for r in one if not r.get("replayed")]
    )
    assert set(lines_of(memory)) <= set(lines_of(one))

    # detect aggregates a re-run into its commit (mean), watch keeps the first value: compare without rhai
    steady = stream[stream.series_id != RHAI]
    alarms = watch([], jsonl(steady))
    raised = {
        (r["series_id"], r["commit"]): r["probability"] for r in alarms if r.get("decision") is True
    }
    withdrawn = {(r["series_id"], r["commit"]) for r in alarms if r.get("withdrawn")}
    d = detect(write(steady, work / "w_steady.csv"), work / "d_steady.csv")
    assert len(d) >= 3
    assert set(raised) - withdrawn == set(zip(d.series_id, d.commit, strict=True))
    assert [raised[k] for k in zip(d.series_id, d.commit, strict=True)] == d.probability.tolist()


# --------------------------------------------------------------------------- formats and ids


def test_one_series_in_every_layout_gives_the_same_results(base: pd.DataFrame, work: Path) -> None:
    """One real series as long CSV, Parquet, Otava CSV, a JSON list and the MongoDB layout:
    the same candidates, scores, P(true) and change points (by commit position); and a detector's
    candidates as Otava's JSON report or as our CSV."""
    one = base[base.series_id == SERIES[2]].assign(series_id="lat").reset_index(drop=True)
    forms = {
        "long": write(one, work / "lat_long.csv"),
        "parquet": work / "lat_long.parquet",
        "otava": write(
            pd.DataFrame(
                {
                    "time": pd.to_datetime(one.timestamp).dt.strftime("%Y-%m-%d %H:%M:%S +0000"),
                    "commit": one.commit,
                    "lat": one.value,
                }
            ),
            work / "lat_otava.csv",
        ),
        "jsonlist": work / "lat.json",
        "mongodb": work / "lat_mongo.csv",
    }
    one.to_parquet(forms["parquet"])
    forms["jsonlist"].write_text(json.dumps(one.value.tolist()))
    pd.DataFrame({"Value": one.value, "MongoDB.Label": ""}).to_csv(
        forms["mongodb"], sep=";", index=False
    )
    seen = {}
    for name, path in forms.items():
        c = (
            candidates(path, "binseg", work / f"lat_c_{name}.csv")
            .sort_values("index")
            .reset_index(drop=True)
        )
        s = score(path, work / f"lat_c_{name}.csv", work / f"lat_s_{name}.csv").sort_values("index")
        d = detect(path, work / f"lat_d_{name}.csv").sort_values("index")
        seen[name] = (
            c["index"].tolist(),
            c.score.tolist(),
            s.p_true.tolist(),
            d["index"].tolist(),
            d.probability.tolist(),
        )
    assert len(seen["long"][0]) >= 3 and len(seen["long"][3]) >= 1
    for name, got in seen.items():
        assert got == seen["long"], name

    # edivisive's candidates as Otava's JSON report (``otava analyze --output json``) = as our CSV
    # without its score column (a report has no score to rank): the same P(true) and calls
    ours = candidates(forms["otava"], "edivisive", work / "lat_ed.csv")
    assert len(ours) >= 3
    report = {
        "lat_otava": [
            {
                "time": 0,
                "attributes": {"commit": c},
                "changes": [
                    {
                        "metric": "lat",
                        "index": int(i),
                        "forward_change_percent": 1.0,
                        "pvalue": 0.001,
                    }
                ],
            }
            for c, i in zip(ours.commit, ours["index"], strict=True)
        ]
    }
    (work / "lat_report.json").write_text(json.dumps(report))
    write(ours.drop(columns=["score"]), work / "lat_ed_noscore.csv")
    from_report = score(forms["otava"], work / "lat_report.json", work / "lat_s_report.csv")
    from_csv = score(forms["otava"], work / "lat_ed_noscore.csv", work / "lat_s_ed.csv")
    np.testing.assert_array_equal(
        from_report.p_true.to_numpy(float), from_csv.p_true.to_numpy(float)
    )
    assert from_report.classification.tolist() == from_csv.classification.tolist()


def test_ids_that_look_like_numbers_or_missing_values_are_kept(
    base: pd.DataFrame,
    files: dict[str, Path],
    work: Path,
    detected: pd.DataFrame,
    scored: pd.DataFrame,
) -> None:
    """Series named ``NA``, ``None``, ``007``, ``1e5``, ``nan``, ``TRUE``, ``null`` and commits
    ``000123``, ``NaN``, ``N/A``, ``1.0``, ``1``: the same results under those names."""
    names = dict(zip(SERIES, ["NA", "None", "007", "1e5", "nan", "TRUE", "null"], strict=True))
    commits = {c: f"{i:06d}" for i, c in enumerate(dict.fromkeys(base.commit))}
    for c, odd in zip(list(commits)[3:7], ["NaN", "N/A", "1.0", "1"], strict=True):
        commits[c] = odd
    odd = base.assign(series_id=base.series_id.map(names), commit=base.commit.map(commits))
    back_s = {v: k for k, v in names.items()}
    back_c = {v: k for k, v in commits.items()}

    def back(frame: pd.DataFrame) -> pd.DataFrame:
        assert set(frame.series_id) <= set(back_s) and set(frame.commit) <= set(back_c)
        out = frame.assign(series_id=frame.series_id.map(back_s), commit=frame.commit.map(back_c))
        return out.sort_values(["series_id", "commit"], kind="stable").reset_index(drop=True)

    path = write(odd, work / "odd.csv")
    a = detected
    assert a.equals(back(detect(path, work / "d_odd.csv")))
    c = candidates(path, "binseg", work / "c_odd.csv")
    s_odd = back(score(path, work / "c_odd.csv", work / "s_odd.csv"))
    s_a = scored  # the slice's binseg candidates, scored
    assert len(c) == len(s_a) > 20
    assert_same_scores(s_a, s_odd)


def test_long_csv_parts_give_the_whole_file(files: dict[str, Path]) -> None:
    """``detect``'s reader in parts of whole series (any part size) = the whole-file reader."""
    from triage.loaders import load, long_csv_parts

    whole = load(files["base"])
    for rows in (7, 300, 100_000):
        parts = [h for part in long_csv_parts(files["base"], rows_per_part=rows) for h in part]
        assert [h.series_id for h in parts] == whole.series_ids, rows
        for h in parts:
            ref = whole[h.series_id]
            assert list(h.commits) == list(ref.commits), (rows, h.series_id)
            np.testing.assert_array_equal(h.values, ref.values)
            np.testing.assert_array_equal(h.timestamps, ref.timestamps)


# --------------------------------------------------------------------------- time order


def _convert_sorted(path: Path, out: Path) -> pd.DataFrame:
    cli(["convert", "--data", path, "--out", out, "--sort-timestamps"])
    return pd.read_csv(out, dtype={"commit": str})


def test_sort_timestamps_restores_shuffled_rows_of_series_without_reruns(
    base: pd.DataFrame, work: Path
) -> None:
    """``convert --sort-timestamps`` of the rows shuffled = the history in time order, then the same
    change points (series whose commits are each measured once)."""
    once = base[base.series_id != RHAI]
    a = _convert_sorted(write(once, work / "once.csv"), work / "once_sorted.csv")
    b = _convert_sorted(
        write(once.sample(frac=1, random_state=1), work / "once_shuf.csv"),
        work / "once_shuf_sorted.csv",
    )
    key = ["series_id"]
    a, b = (f.sort_values(key, kind="stable").reset_index(drop=True) for f in (a, b))
    assert a.equals(b)
    assert detect(work / "once_sorted.csv", work / "d_once.csv").equals(
        detect(work / "once_shuf_sorted.csv", work / "d_once_shuf.csv")
    )


def test_sort_timestamps_does_not_depend_on_row_order(base: pd.DataFrame, work: Path) -> None:
    """A commit measured twice: the same sorted history whichever of its rows comes first in the file."""
    tiny = pd.DataFrame(
        {
            "series_id": ["s", "s", "s"],
            "commit": ["a", "b", "a"],
            "timestamp": ["2024-01-01T10:00:00", "2024-01-01T11:00:00", "2024-01-01T12:00:00"],
            "value": [1.0, 2.0, 1.2],
        }
    )
    in_time = _convert_sorted(write(tiny, work / "tiny.csv"), work / "tiny_sorted.csv")
    assert in_time.commit.tolist() == ["a", "b"]
    rerun_first = _convert_sorted(
        write(tiny.iloc[[2, 1, 0]], work / "tiny_rev.csv"), work / "tiny_rev_sorted.csv"
    )
    assert rerun_first.commit.tolist() == ["a", "b"]
    rhai = base[base.series_id == RHAI]
    a = _convert_sorted(write(rhai, work / "rhai.csv"), work / "rhai_sorted.csv")
    b = _convert_sorted(
        write(rhai.sample(frac=1, random_state=1), work / "rhai_shuf.csv"),
        work / "rhai_shuf_sorted.csv",
    )
    assert a.commit.tolist() == b.commit.tolist()


# --------------------------------------------------------------------------- sampling


def test_sample_and_culprit_do_not_depend_on_the_unit(base: pd.DataFrame, work: Path) -> None:
    """``sample`` picks the same next commits and ``culprit`` measures the same commits in the same
    order when the partly measured history is given x 1000 (its estimates scale with it)."""
    one = (
        base[base.series_id == SERIES[2]]
        .drop_duplicates("commit")
        .reset_index(drop=True)
        .iloc[:120]
    )
    every4 = np.arange(len(one)) % 4 == 0
    gap = (np.arange(len(one)) > 10) & (np.arange(len(one)) < 40)
    got = {}
    for f in (1.0, 1000.0):
        values = one.value.to_numpy() * f
        partial = write(
            pd.DataFrame({"commit": one.commit, "value": np.where(every4, values, np.nan)}),
            work / f"partial_{f}.csv",
        )
        cli(["sample", "--data", partial, "--budget", "5", "--out", work / f"estimate_{f}.csv"])
        est = pd.read_csv(work / f"estimate_{f}.csv")
        gapped = write(
            pd.DataFrame({"commit": one.commit, "value": np.where(gap, np.nan, values)}),
            work / f"gapped_{f}.csv",
        )
        oracle = write(
            pd.DataFrame({"commit": one.commit, "value": values}), work / f"oracle_{f}.csv"
        )
        cli(
            [
                "culprit",
                "--data",
                gapped,
                "--before",
                one.commit[10],
                "--after",
                one.commit[40],
                "--oracle",
                oracle,
                "--out",
                work / f"culprit_{f}.csv",
            ]
        )
        got[f] = est, pd.read_csv(work / f"culprit_{f}.csv", dtype={"commit": str})
    (est_a, cul_a), (est_b, cul_b) = got[1.0], got[1000.0]
    assert est_a.next.notna().sum() == 5
    assert est_a.next.equals(est_b.next)
    np.testing.assert_allclose(est_b.estimate / 1000.0, est_a.estimate, rtol=1e-9)
    np.testing.assert_allclose(est_b.upper / 1000.0, est_a.upper, rtol=1e-9)
    assert len(cul_a) >= 3
    assert cul_a.commit.tolist() == cul_b.commit.tolist()
    assert cul_a.nearer.tolist() == cul_b.nearer.tolist()


# --------------------------------------------------------------------------- training


def test_train_does_not_depend_on_the_order_of_the_series(work: Path) -> None:
    """The same labelled history with its series in reverse order: the same model (same P(true))."""
    cli(["synth", "--preset", "small", "--out", work / "small"])
    history = pd.read_parquet(work / "small" / "history.parquet")
    ids = list(dict.fromkeys(history.series_id))
    forward = write(history, work / "small_fwd.csv")
    backward = write(
        pd.concat([history[history.series_id == s] for s in reversed(ids)]), work / "small_rev.csv"
    )
    p_true = []
    for name, data in (("fwd", forward), ("rev", backward)):
        cli(
            [
                "train",
                "--data",
                data,
                "--window",
                "adaptive",
                "--out",
                work / f"model_{name}",
                "--no-track",
                "--test-size",
                "0",
            ]
        )
        p_true.append(
            label(
                forward,
                work / f"lab_{name}.csv",
                "--model",
                work / f"model_{name}",
                "--which",
                "all",
            ).p_true.to_numpy(float)
        )
    assert len(p_true[0]) > 50
    np.testing.assert_array_equal(p_true[0], p_true[1])  # up to 0.11 apart today
