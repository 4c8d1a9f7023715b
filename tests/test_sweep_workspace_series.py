"""Odd series in the workspace: missing values, one commit, all missing, values with rounding noise."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.workspace.alerts import build_alerts, reason
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette suggests httpx2 for its test client
    from starlette.testclient import TestClient


def _history(sid: str, values, candidates=()) -> History:
    values = np.asarray(values, dtype=float)
    labels = np.full(len(values), L.NONE, dtype=object)
    for i in candidates:
        labels[i] = L.NOT_TRIAGED
    stamps = pd.date_range("2026-01-01", periods=len(values), freq="h").to_numpy()
    return History(
        sid, [f"{sid}-{i}" for i in range(len(values))], values, labels, timestamps=stamps
    )


def _gappy() -> History:
    """A step from 1 to 2 at commit 50, with a value missing on each side (a failed run)."""
    values = np.r_[np.ones(50), np.full(50, 2.0)] + np.random.default_rng(0).normal(0, 0.05, 100)
    values[[40, 60]] = np.nan
    h = _history("gappy", values, [50])
    h.higher_is_better = False  # a time
    return h


@pytest.fixture
def client(tmp_path) -> TestClient:
    dataset = Dataset(
        [_gappy(), _history("missing", [np.nan] * 5, [2]), _history("one", [3.0], [0])],
        source="<t>",
    )
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite")
    )
    return TestClient(create_app(ws), raise_server_exceptions=False)


def test_a_missing_value_near_the_change_does_not_hide_it():
    why, pct, direction = reason(_gappy(), 50)
    assert why.startswith("median rose") and direction == "regression"
    assert 90 < pct < 110


def test_a_series_with_every_value_missing_says_so():
    why, pct, direction = reason(_history("missing", [np.nan] * 5), 2)
    assert "no values" in why and direction == "none" and np.isnan(pct)


@pytest.mark.parametrize("sid", ["gappy", "missing", "one"])
def test_plots_and_pages_of_odd_series(client, sid):
    png = client.get("/plot.png", params={"id": sid})
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.get("/series", params={"id": sid}).status_code == 200


def test_rounding_in_the_values_is_not_read_as_a_tiny_noise():
    """The size in noise sd is the same whether the values are stored in tenths or in whole units.

    (1.1 - 1.0 and 5.1 - 5.0 differ in the last bit: their spread is not the series' noise.)
    """
    tenths = _history("tenths", [1.0, 1.1, 5.0, 5.1])
    units = _history("units", [10.0, 11.0, 50.0, 51.0])
    sd = [re.search(r"\(([\d.e+]+) noise sd\)", reason(h, 2)[0]) for h in (tenths, units)]
    assert sd[0] and sd[1] and sd[0].group(1) == sd[1].group(1)


def test_one_commit_of_change_reads_in_the_singular():
    values = (
        np.r_[np.full(30, 1.0), [2.0]] + np.r_[np.random.default_rng(1).normal(0, 0.01, 30), 0.0]
    )
    assert reason(_history("last", values), 30)[0].endswith("(1 commit)")


@pytest.mark.parametrize(
    "name", ["io.bench.Outer$Inner.run$x^{2", r"price $\undefinedcommand$ per op"]
)
def test_a_dollar_in_a_series_name_is_text_not_mathtext(tmp_path, name):
    """JMH names nested classes Outer$Inner: matplotlib read '$...$' in the title as TeX and failed (500)."""
    h = _history(name, np.r_[np.ones(20), np.full(20, 2.0)], [20])
    dataset = Dataset([h], source="<t>")
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite")
    )
    png = TestClient(create_app(ws), raise_server_exceptions=False).get(
        "/plot.png", params={"id": name}
    )
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "higher, direction", [(None, "change"), (True, "regression"), (False, "improvement")]
)
def test_the_direction_is_only_what_the_data_says(higher, direction):
    """A long-layout file does not say which way is better: a fall in ops/s is no 'improvement'."""
    h = _history(
        "ops",
        np.r_[np.full(30, 1000.0), np.full(30, 800.0)] + np.random.default_rng(2).normal(0, 5, 60),
    )
    h.higher_is_better = higher
    why, pct, got = reason(h, 30)
    assert got == direction and why.startswith("median fell") and pct < -15


def test_the_queue_filters_changes_of_unknown_direction(tmp_path):
    ops = _history("ops", np.r_[np.full(30, 1000.0), np.full(30, 800.0)], [30])  # direction unknown
    ms = _history("ms", np.r_[np.full(30, 10.0), np.full(30, 12.0)], [30])
    ms.higher_is_better = False
    dataset = Dataset([ops, ms], source="<t>")
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite")
    )
    r = TestClient(create_app(ws)).get("/", params={"direction": "change"})
    assert r.status_code == 200 and 'value="change" selected' in r.text
    assert re.findall(r'data-series="(\w+)"', r.text) == ["ops"]


def test_p_true_labels_of_close_candidates_do_not_overlap():
    from triage.plotting import label_rows
    from triage.workspace.plot import LABEL_GAP, MAX_LABEL_ROWS

    # Two candidates a few commits apart in 132 (as on a demo series), one far away: all three drawn,
    # the close two on different rows (a dropped label, None, had passed for a placed one).
    positions = [70 / 132, 72 / 132, 120 / 132]
    rows = label_rows(positions, gap=LABEL_GAP, max_rows=MAX_LABEL_ROWS)
    assert None not in rows and rows[0] != rows[1] and rows[2] == 0
    # However many crowd together, no two labels closer than the gap share a row, and every row is used.
    crowd = [0.5 + 0.004 * k for k in range(8)]
    rows = label_rows(crowd, gap=LABEL_GAP, max_rows=MAX_LABEL_ROWS)
    assert sum(r is not None for r in rows) >= MAX_LABEL_ROWS
    for i in range(len(crowd)):
        for j in range(i):
            if rows[i] is not None and rows[j] is not None:  # (None: not drawn)
                assert rows[i] != rows[j] or abs(crowd[i] - crowd[j]) >= LABEL_GAP


def test_a_crowd_of_candidates_keeps_a_few_label_rows_and_still_plots(tmp_path):
    """A detector firing every 10th commit of 20,000: labels beyond a few rows are left out, not stacked
    into hundreds of rows that squash the plot into a line."""
    from triage.plotting import label_rows
    from triage.workspace.plot import LABEL_GAP, MAX_LABEL_ROWS

    rows = label_rows([k / 2000 for k in range(2000)], gap=LABEL_GAP, max_rows=MAX_LABEL_ROWS)
    assert max(r for r in rows if r is not None) < MAX_LABEL_ROWS
    assert rows.count(None) > 0 and rows[0] == 0
    n = 20_000
    values = 100 + np.random.default_rng(0).normal(0, 1, n)
    h = _history("busy", values, range(0, n, 10))
    dataset = Dataset([h], source="<t>")
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite")
    )
    png = TestClient(create_app(ws)).get("/plot.png", params={"id": "busy"})
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_report_labels_the_most_likely_of_close_decisions_in_one_row():
    """The report's order (most likely true first, one row): of two decisions closer than the gap the
    likelier is written even when it lies to the right; a full row stops the placing."""
    from triage.plotting import label_rows

    positions = [0.50, 0.51, 0.90]
    assert label_rows(positions, gap=0.03, max_rows=1, order=[1, 2, 0]) == [None, 0, 0]
    assert label_rows(positions, gap=0.03, max_rows=1, order=[0, 2]) == [0, None, 0]  # 1 left out
    every = [k / 999 for k in range(1000)]
    rows = label_rows(every, gap=0.03, max_rows=1, order=range(999, -1, -1))
    placed = [every[k] for k, r in enumerate(rows) if r == 0]
    assert len(placed) == int(1 / 0.03) + 1 and placed[-1] == 1.0
    assert float(np.diff(placed).min()) >= 0.03
