"""Hostile input to ``triage sample`` and ``triage culprit``: each test pins a defect found by a sweep.

The rules: bad input is one line naming the file, the row and the problem,
exit 2, no traceback; an output that cannot be written is refused before
any measurement is asked for, so that no typed-in reading is lost.

The commands run in-process through main()'s boundary, standard output and
standard error apart (``helpers_cli.invoke_apart``): a fresh interpreter per run cost 2-3 s of
imports and checked nothing more. Where the point is what a shell's pipe gets
(``--out -``: only the CSV on standard output), they run in a fresh
interpreter (``run_triage``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from helpers_cli import flat, run_triage
from helpers_cli import invoke_apart as triage

from triage.core.errors import InputError
from triage.sampling.culprit import culprit_posterior
from triage.sampling.partial import PartialHistory


def _partial(path: Path, scale: float = 1.0, extra: tuple[int, ...] = (29, 32, 33), every: int = 5) -> Path:
    """60 commits, a step from 1 to 1.5 (times ``scale``) at c31; every ``every``-th and ``extra`` measured."""
    rng = np.random.default_rng(0)
    rows = ["commit,value"]
    for i in range(60):
        v = (1.0 + 0.5 * (i >= 31) + rng.normal(0, 0.02)) * scale
        rows.append(f"c{i},{v!r}" if i % every == 0 or i in extra else f"c{i},")
    path.write_text("\n".join(rows) + "\n")
    return path


def _oracle(path: Path, values: dict[int, float]) -> Path:
    path.write_text("commit,value\n" + "".join(f"c{i},{v!r}\n" for i, v in values.items()))
    return path


def test_sample_refuses_a_value_whose_square_overflows(tmp_path):
    # Was: exit 0, "overflow encountered in square" warnings and a plan of NaN estimates.
    data = tmp_path / "p.csv"
    data.write_text("commit,value\nc1,1.0\nc2,1e300\nc3,\nc4,2.0\n")
    out = tmp_path / "plan.csv"
    res = triage("sample", "--data", str(data), "--budget", "1", "--out", str(out))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "p.csv, row 3" in res.stderr and "outside the usable range" in res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


def test_culprit_refuses_an_oracle_value_out_of_range(tmp_path):
    # Was: internal error (OverflowError in the posterior), exit 1.
    data = _partial(tmp_path / "p.csv")
    oracle = _oracle(tmp_path / "oracle.csv", {i: 1e300 for i in range(60)})
    res = triage(
        "culprit", "--data", str(data), "--before", "c25", "--after", "c35", "--oracle", str(oracle)
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "oracle.csv, row 2" in res.stderr and "outside the usable range" in res.stderr
    assert "internal error" not in res.stderr


def test_culprit_survives_a_reading_far_from_both_levels(tmp_path):
    # Levels near 1e-90 and a reading of 1e90, both in the usable range: the
    # reading is 1e180 noise scales away, whose square overflowed (internal error).
    data = _partial(tmp_path / "p.csv", scale=1e-90)
    answers = {i: (1.0 + 0.5 * (i >= 31)) * 1e-90 for i in range(60)}
    answers[30] = 1e90
    oracle = _oracle(tmp_path / "oracle.csv", answers)
    res = triage(
        "culprit", "--data", str(data), "--before", "c25", "--after", "c35", "--oracle", str(oracle)
    )
    assert res.returncode == 0, res.stdout + res.stderr
    # The wild reading tells nothing, so c30 and c31 stay equally likely.
    assert "culprit: c3" in res.stdout and "internal error" not in res.stderr


def test_a_far_reading_is_uninformative_in_the_posterior():
    cands, p = culprit_posterior(0, 10, [(5, 1e90)], 1e-90, 2e-90, 1e-92)
    assert np.all(np.isfinite(p)) and np.allclose(p, 1 / len(cands))


def test_culprit_refuses_an_unwritable_out_before_asking_for_measurements(tmp_path):
    # Was: the search ran (interactively: the user measured commit after
    # commit), then writing --out failed and the readings were lost.
    data = _partial(tmp_path / "p.csv")
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    for out in (tmp_path / "adir", tmp_path / "afile" / "steps.csv"):
        res = triage(
            "culprit",
            "--data",
            str(data),
            "--before",
            "c25",
            "--after",
            "c35",
            "--out",
            str(out),
            stdin="1.0\n" * 12,
        )
        assert res.returncode == 2, res.stdout + res.stderr
        # Refused as an option error or by the command: the file named either way.
        said = "".join(res.stderr.replace("│", " ").split())
        assert "value of commit" not in res.stdout and out.name in said


def test_culprit_asks_again_for_a_typed_value_out_of_range(tmp_path):
    data = _partial(tmp_path / "p.csv")
    typed = "1e300\n" + "1.5\n" * 12
    res = triage(
        "culprit",
        "--data",
        str(data),
        "--before",
        "c25",
        "--after",
        "c35",
        "--strategy",
        "bisect",
        stdin=typed,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "outside the usable range" in res.stdout and "culprit:" in res.stdout


def test_culprit_keeps_the_readings_typed_before_the_input_ended(tmp_path):
    # Was: two commits measured by hand, then ^D: exit 2 and both readings gone.
    # A gap of 9 unmeasured commits: two readings cannot settle it (the search never asks
    # again for a commit the data measures, so a gap holding some needs fewer).
    data = _partial(tmp_path / "p.csv", extra=(), every=10)
    out = tmp_path / "steps.csv"
    res = triage(
        "culprit", "--data", str(data), "--before", "c30", "--after", "c40", "--out", str(out),
        stdin="1.0\n1.5\n",
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert "the input ended" in res.stderr and "2 readings" in res.stderr and str(out) in res.stderr
    steps = out.read_text().splitlines()
    assert steps[0] == "step,commit,position,value,nearer" and len(steps) == 3
    assert steps[1].endswith(",1.0,old") and steps[2].endswith(",1.5,new")


def test_partial_history_from_stdin_and_from_any_compression(tmp_path):
    # Was: `--data -` was "no such file"; a plain CSV named .gz "cannot
    # decompress"; a gzip file's series was named "p.csv" (its stem kept .csv).
    text = "commit,value\nc1,1.0\nc2,\nc3,2.0\n"
    res = triage("sample", "--data", "-", "--budget", "1", stdin=text)
    assert res.returncode == 0, res.stderr
    assert "c2" in res.stdout
    plain_named_gz = tmp_path / "p.csv.gz"
    plain_named_gz.write_text(text)
    res = triage("sample", "--data", str(plain_named_gz), "--budget", "1")
    assert res.returncode == 0, res.stderr
    assert "p: 2 of 3 commits measured" in res.stdout


def test_partial_history_not_utf8_names_the_row(tmp_path):
    data = tmp_path / "p.csv"
    data.write_bytes(b"commit,value\nc1,1.0\nc\xe92,\nc3,2.0\n")
    res = triage("sample", "--data", str(data), "--budget", "1")
    assert res.returncode == 2
    assert "p.csv, row 3: not a UTF-8 text file" in res.stderr


def test_culprit_does_not_claim_a_noise_scale_it_never_measured(tmp_path):
    # Was: "step 10.0 noise scales (the 2 neighbours' spread)" with one
    # neighbour a side, whatever the step: a stand-in sigma reported as measured.
    data = _partial(tmp_path / "p.csv")
    oracle = _oracle(tmp_path / "oracle.csv", {i: 1.0 + 0.5 * (i >= 31) for i in range(60)})
    args = [
        "culprit",
        "--data",
        str(data),
        "--before",
        "c25",
        "--after",
        "c35",
        "--oracle",
        str(oracle),
    ]
    res = triage(*args, "--levels", "1")
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert "noise unknown" in text and "noise scales" not in text
    res = triage(*args)
    assert res.returncode == 0 and "noise scales (the 10 neighbours' spread)" in " ".join(
        res.stdout.split()
    )


def test_sample_and_culprit_keep_stdout_for_the_csv_when_out_is_stdout(tmp_path):
    # Was: the table and the summary lines (and the prompts) went to stdout
    # with the CSV of --out -, so `triage sample ... --out - > plan.csv` was not a CSV.
    data = _partial(tmp_path / "p.csv")
    oracle = _oracle(tmp_path / "oracle.csv", {i: 1.0 + 0.5 * (i >= 31) for i in range(60)})
    res = run_triage("sample", "--data", str(data), "--budget", "2", "--out", "-")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "commit,position,measured,estimate,lower,upper,next" and len(lines) == 61
    assert "measure next" in res.stderr
    find = ["culprit", "--data", str(data), "--before", "c25", "--after", "c35", "--out", "-"]
    for extra, stdin in (
        (["--oracle", str(oracle)], None),
        (["--strategy", "bisect"], "1.0\n1.5\n" * 6),
    ):
        res = run_triage(*find, *extra, stdin=stdin)
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        assert lines[0] == "step,commit,position,value,nearer", res.stdout
        assert all(line[0].isdigit() for line in lines[1:]) and "culprit:" in res.stderr


def test_culprit_takes_a_short_git_hash(tmp_path):
    # Was: `--before 48af871` (git's short form of a hash in the file) was
    # "not in series": engineers copy short hashes from `git log --oneline`.
    ids = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(60)]
    rng = np.random.default_rng(0)
    rows = [
        f"{c},{1.0 + 0.5 * (i >= 31) + rng.normal(0, 0.02)!r}"
        if i % 5 == 0 or i in (29, 30, 32, 33)
        else f"{c},"
        for i, c in enumerate(ids)
    ]
    data = tmp_path / "p.csv"
    data.write_text("commit,value\n" + "\n".join(rows) + "\n")
    oracle = _oracle(tmp_path / "oracle.csv", {})
    oracle.write_text(
        "commit,value\n" + "".join(f"{c},{1.0 + 0.5 * (i >= 31)}\n" for i, c in enumerate(ids))
    )
    args = ["culprit", "--data", str(data), "--oracle", str(oracle), "--after", ids[35][:7]]
    res = triage(*args, "--before", ids[25][:7])
    assert res.returncode == 0, res.stderr
    assert f"culprit: {ids[31]}" in " ".join(res.stdout.split())
    res = triage(*args, "--before", ids[25][:3])  # shorter than 4: no prefix search
    assert res.returncode == 2 and "not in series" in res.stderr


def test_a_commit_prefix_must_be_unique():
    history = PartialHistory(
        "s", np.array(["abcd1234", "abcd5678", "ef012345"]), np.array([1.0, 2.0, 3.0])
    )
    assert history.position("abcd5", "f.csv") == 1 and history.position("ef01", "f.csv") == 2
    assert history.position("abcd1234", "f.csv") == 0
    with pytest.raises(InputError, match="start of 2 commit ids"):
        history.position("abcd", "f.csv")
    with pytest.raises(InputError, match="not in series"):
        history.position("abc", "f.csv")


def test_series_asked_for_is_compared_stripped_like_the_file_ids(tmp_path):
    data = tmp_path / "p.csv"
    data.write_text(
        "series_id,commit,value\n a ,c1,1.0\n a ,c2,\n a ,c3,2.0\nb,c1,5\nb,c2,\nb,c3,6\n"
    )
    res = triage("sample", "--data", str(data), "--budget", "1", "--series", " a")
    assert res.returncode == 0, res.stderr
    assert "a: 2 of 3 commits measured" in res.stdout


def test_culprit_says_when_its_answer_is_not_settled(tmp_path):
    """A bayes search stopped short of its confidence target says so; a settled one does not."""
    data = _partial(tmp_path / "p.csv", extra=())
    oracle = _oracle(tmp_path / "oracle.csv", {i: 1.0 + 0.5 * (i >= 31) for i in range(60)})
    args = ("culprit", "--data", str(data), "--before", "c20", "--after", "c40", "--oracle", str(oracle),
            "--strategy", "bayes")
    short = triage(*args, "--max-measurements", "1")
    assert short.returncode == 0, short.stdout + short.stderr
    assert "not settled: the search stopped at confidence" in flat(short.stdout)
    assert "short of its 0.95 target (--max-measurements reached)" in flat(short.stdout)
    settled = triage(*args)
    assert settled.returncode == 0, settled.stdout + settled.stderr
    assert "culprit: c31" in settled.stdout and "not settled" not in settled.stdout
