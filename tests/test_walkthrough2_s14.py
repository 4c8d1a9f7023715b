"""Defects found by a walkthrough of sample / culprit / steady / serve on real histories.

Each test builds its own small inputs (never the real data):

* ``culprit`` asked the oracle (or the user, by prompt) again for commits of
  the gap that the data already measured, and said they were unmeasured;
* series ids, commit ids and file names with brackets (JMH names its series
  ``Bench.parse[size=1024]``) were read as rich markup by ``steady``,
  ``sample``, ``culprit`` and the ``labels`` commands: shown wrong, or an
  internal error for ``[/]``;
* ``serve --model default`` loaded the alerts model, not the scoring model
  its help names (P(true) unlike ``triage score``'s for the same candidates),
  and an online model was an internal KeyError instead of a refusal.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.core.errors import InputError
from triage.sampling import find_culprit

# ---------------------------------------------------------------- culprit: measured commits in the gap


def _joined(text: str) -> str:
    """The output without any whitespace: rich wraps a long tmp path mid-word (pytest-xdist's are longer)."""
    return "".join(flat(text).split())


def _gap_history(tmp_path: Path, inside: tuple[int, ...] = (14, 22)) -> tuple[Path, Path]:
    """40 commits, a step 100 -> 130 at c20; measured: c0..c9, c30..c39 and ``inside`` (in the gap)."""
    values = [100.0 + 30.0 * (i >= 20) + (0.5 if i % 2 else -0.5) for i in range(40)]
    measured = set(range(10)) | set(range(30, 40)) | set(inside)
    data = tmp_path / "partial.csv"
    data.write_text(
        "commit,value\n" + "".join(f"c{i},{values[i] if i in measured else ''}\n" for i in range(40))
    )
    oracle = tmp_path / "oracle.csv"
    oracle.write_text("commit,value\n" + "".join(f"c{i},{values[i]}\n" for i in range(40)))
    return data, oracle


@pytest.mark.parametrize("strategy", ["bayes", "bisect"])
def test_culprit_uses_the_gap_commits_measured_already(tmp_path: Path, strategy: str) -> None:
    data, oracle = _gap_history(tmp_path)
    out = tmp_path / "steps.csv"
    code, text = invoke(
        ["culprit", "--data", data, "--before", "c9", "--after", "c30", "--oracle", oracle,
         "--strategy", strategy, "--out", out]
    )
    text = flat(text)
    assert code == 0, text
    steps = pd.read_csv(out)
    # c14 and c22 were in the data: never measured again.
    assert not set(steps["commit"]) & {"c14", "c22"}, steps
    assert "culprit: c20 " in text
    assert "for 18 unmeasured commits (2 more of the gap measured already" in text


@pytest.mark.parametrize("strategy", ["bayes", "bisect"])
def test_culprit_never_asks_for_a_gap_commit_it_has(tmp_path: Path, strategy: str) -> None:
    """By prompt: the middle of the gap (c19, c20: where both searches start) is in the data, so not asked for."""
    data, _ = _gap_history(tmp_path, inside=(19, 20))
    code, text = invoke(["culprit", "--data", data, "--before", "c9", "--after", "c30", "--strategy", strategy,
                         "--max-measurements", "1"], stdin="100\n")
    assert code == 0, text
    assert "value of commit c" in text
    assert "value of commit c19 " not in text and "value of commit c20 " not in text


def test_find_culprit_known_readings_are_evidence_not_measurements() -> None:
    y = np.r_[np.zeros(20), np.ones(20)]
    asked: list[int] = []

    def oracle(i: int) -> float:
        asked.append(i)
        return float(y[i])

    known = {i: float(y[i]) for i in range(1, 39)}  # the whole gap measured
    for strategy in ("bayes", "bisect"):
        asked.clear()
        s = find_culprit(0, 39, oracle, 0.0, 1.0, 0.05, strategy=strategy, known=known)
        assert asked == [] and s.measured == [] and s.culprit == 20, (strategy, s)
    asked.clear()
    s = find_culprit(0, 39, oracle, 0.0, 1.0, 0.05, strategy="bayes", known={19: 0.0})
    assert 19 not in asked and s.culprit == 20


# ---------------------------------------------------------------- brackets are text, not markup


def _jmh(path: Path, bench: str = "org.acme.Bench.parse") -> Path:
    rng = np.random.default_rng(0)

    def fork(rising: bool) -> list[float]:
        warm = np.exp(-np.arange(40) / 3.0)
        base = 1000.0 * (1 - 0.5 * warm) if rising else 1.0 * (1 + warm)
        return list(np.round(base * (1 + 0.01 * rng.standard_normal(40)), 5))

    path.write_text(json.dumps([
        {"benchmark": bench, "mode": "avgt", "params": {"size": "1024"},
         "primaryMetric": {"scoreUnit": "ms/op", "rawData": [fork(False), fork(False)]}},
        {"benchmark": bench, "mode": "thrpt", "params": {"size": "1024"},
         "primaryMetric": {"scoreUnit": "ops/s", "rawData": [fork(True), fork(True)]}},
    ]))
    return path


def test_steady_table_names_jmh_series_whole(tmp_path: Path) -> None:
    files = [_jmh(tmp_path / f"c{i}.json") for i in range(2)]
    out = tmp_path / "steady[bold].csv"
    code, text = invoke(["steady", *files, "--out", out, "--trim-warmup", "kbkssd"])
    assert code == 0, text
    # The series column folds a long name over lines: put its first cells back together.
    cells = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    assert "org.acme.Bench.parse[size=1024]:avgtorg.acme.Bench.parse[size=1024]:thrpt" in cells
    assert f"->{out}" in _joined(text)


def test_sample_and_culprit_show_bracketed_ids(tmp_path: Path) -> None:
    data = tmp_path / "p.csv"
    data.write_text(
        "series_id,commit,value\n"
        + "".join(f"s[/]x,c[b]{i},{100 + 20 * (i >= 6) if i in (0, 1, 2, 3, 9, 10, 11, 12) else ''}\n"
                  for i in range(13))
    )
    out = tmp_path / "est[bold].csv"
    code, text = invoke(["sample", "--data", data, "--budget", "2", "--out", out])
    assert code == 0, text  # was an internal error: MarkupError on "[/]"
    assert "s[/]x: 8 of 13 commits measured" in flat(text)
    assert "c[b]" in text and f"->{out}" in _joined(text)
    oracle = tmp_path / "o.csv"
    oracle.write_text("commit,value\n" + "".join(f"c[b]{i},{100 + 20 * (i >= 6)}\n" for i in range(13)))
    code, text = invoke(["culprit", "--data", data, "--before", "c[b]3", "--after", "c[b]9", "--oracle", oracle])
    assert code == 0, text
    assert "s[/]x: change between c[b]3" in flat(text) and "culprit: c[b]6 " in flat(text)


# ---------------------------------------------------------------- the workspace's model


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """Two series of 60 commits with a step at 30 (one up, one down), and noise."""
    rng = np.random.default_rng(3)
    rows = []
    for s, (lo, hi) in {"up": (10.0, 14.0), "down": (50.0, 40.0)}.items():
        for i in range(60):
            rows.append((s, f"{s}{i}", (lo if i < 30 else hi) * (1 + 0.02 * rng.standard_normal())))
    path = tmp_path / "h.csv"
    pd.DataFrame(rows, columns=["series_id", "commit", "value"]).to_csv(path, index=False)
    return path


def test_serve_default_model_scores_as_triage_score(history: Path, tmp_path: Path) -> None:
    from triage.cli.workspace import build_workspace

    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit,detector\nup,up30,perfherder\nup,up12,perfherder\ndown,down30,perfherder\n")
    scored = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", history, "--candidates", cands, "--out", scored])
    assert code == 0, text
    want = pd.read_csv(scored).set_index(["series_id", "commit"])
    ws = build_workspace(history, tmp_path / "l.sqlite", cands, "default", commit_url=None, sheriff="me", token=None)
    try:
        for a in ws.alerts:
            assert a.p_true == pytest.approx(want.loc[a.key, "p_true"]), a.key
            assert a.model_call == want.loc[a.key, "classification"], a.key
    finally:
        ws.store.close()


def test_serve_refuses_an_online_model_by_name(history: Path, tmp_path: Path) -> None:
    from triage.cli.workspace import build_workspace

    with pytest.raises(InputError, match="online model"):
        build_workspace(history, tmp_path / "l.sqlite", None, "online-w4", commit_url=None, sheriff="me", token=None)
    assert not (tmp_path / "l.sqlite").exists()


def test_labels_commands_print_bracketed_paths_as_they_are(history: Path, tmp_path: Path) -> None:
    from triage.workspace.store import LabelsStore

    labels = tmp_path / "lab[bold].sqlite"
    store = LabelsStore(labels)
    store.record("up", "up30", "true", who="me", note="", p_true=0.9, model_call="true_positive", model="m")
    store.close()
    out = tmp_path / "dec[bold].csv"
    code, text = invoke(["labels", "export", "--labels", labels, "--out", out])
    assert code == 0, text
    assert f"writtento{out}" in _joined(text)
    code, text = invoke(["labels", "agreement", "--labels", labels])
    assert code == 0, text
    assert "lab[bold].sqlite" in "".join(text.split())


# ---------------------------------------------------------------- the series plot's P(true) labels


def test_series_plot_legend_leaves_the_p_true_labels_visible() -> None:
    """Alerts in the first third of a series: their P(true) labels sat under the legend (upper left)."""
    from matplotlib.text import Annotation

    from triage.core.history import Dataset
    from triage.workspace.plot import series_figure

    values = np.r_[np.full(5, 10.0), np.full(55, 14.0)] + 0.01 * np.arange(60) % 0.03
    frame = pd.DataFrame({"series_id": "s", "commit": [f"c{i}" for i in range(60)], "value": values})
    history = Dataset.from_frame(frame)["s"]
    points = [(2, "untriaged", 0.42, "false_positive"), (5, "true", 0.97, "true_positive"),
              (9, "false", 0.13, "false_positive"), (14, "unsure", 0.55, "true_positive")]
    fig = series_figure(history, points, title="s")
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent(renderer)
    labels = [a for a in ax.texts if isinstance(a, Annotation)]
    assert len(labels) == 4
    for a in labels:
        assert not legend.overlaps(a.get_window_extent(renderer)), a.get_text()


# ---------------------------------------------------------------- sample / culprit: say why


def test_sample_says_why_it_lists_fewer_commits_than_the_budget(tmp_path: Path) -> None:
    some = tmp_path / "some.csv"
    some.write_text("commit,value\na,1\nb,\nc,2\n")
    code, text = invoke(["sample", "--data", some, "--budget", "5"])
    assert code == 0 and "only 1 commit of the history is not measured (--budget 5)" in flat(text), text
    every = tmp_path / "every.csv"
    every.write_text("commit,value\na,1\nb,1.5\nc,2\n")
    code, text = invoke(["sample", "--data", every, "--budget", "2"])
    assert code == 0 and "every commit is measured: nothing left to measure" in flat(text), text


def test_culprit_says_a_prefix_needs_four_characters(tmp_path: Path) -> None:
    data, _ = _gap_history(tmp_path)
    code, text = invoke(["culprit", "--data", data, "--before", "c9", "--after", "c3x"])
    assert code == 2
    assert "commit 'c3x' is not in series 'partial' (a prefix needs at least 4 characters)" in flat(text), text
