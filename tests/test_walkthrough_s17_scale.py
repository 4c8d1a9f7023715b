"""Walkthrough s17: a performance engineer running the commands on large inputs.

Large but plausible inputs were built from the real histories (tiled 4x and
12x: 1,488 and 4,464 series, 3 M rows) and from long series (100,000
commits); the growth of each command's time and memory was measured at two
or three sizes. Defects found (what a user did, what went wrong, what
happens now):

1. Started ``triage serve`` on long series whose alerts are changes that
   last (a memory series that steps up and stays, a staircase): building the
   queue took O(alerts x commits) Python-level medians, one per commit after
   each alert, to find where each change ended. 100 alerts on a staircase of
   10,000 / 20,000 / 40,000 commits: 6.8 / 16.1 / 35.0 s before the server
   answered (1,000 alerts on 100,000 commits would be over 15 minutes); 705
   perfherder alerts on two 100,000-commit real-noise series: 5.8 s. Now the
   medians of every run of 5 commits are computed once per series
   (``triage.workspace.alerts.settle_medians``) and each alert reads a slice:
   0.01 s for the staircases, 0.08 s for the 705 alerts, the same reasons.
2. Ran ``triage report`` on decisions of long series (two series of 100,000
   commits, 5,000 / 20,000 decisions): each table row's "step" scanned every
   label of its series for the confirmed changes (``History.confirmed``), so
   the table cost O(rows x commits). Now read once per series.
3. Same run: every decision's P(true) was written on its series' plot, 2,500
   and 10,000 overlapping labels on an 11-inch plot (an unreadable smear),
   each a text artist drawn three times: the report took 11.2 / 38.7 s (of
   which 8 and 33 s the two plots). Now a plot writes the P(true) of the most
   likely alerts where no other label is within 3 % of its width (at most
   34; the table has every P(true)): 3.6 / 5.0 s (defects 2 and 3 together).
4. Ran ``triage report --candidates`` with many series that have candidates
   but no decision: the list of series to plot rebuilt a set of the decided
   series for every candidate series, quadratic in the series count (5,000 /
   10,000 / 20,000 series each side: 0.6 / 1.4 / 15 s for that one line).
   Now one set: 0.0002 / 0.0005 / 0.001 s.
5. Served a workspace of 99,544 alerts (1,488 real series tiled from the
   real histories) with a labels store of 50,000 decisions: every queue page
   load built the full row (commit link, anchor, call) of all 99,544 alerts
   to show 200, and every series page scanned every alert for its series:
   queue 1.25-1.34 s (25,416 alerts: 0.29 s), series page 0.19 s. Now the
   queue builds rows only for the alerts it shows and a series page reads
   its own alerts: queue 0.54-0.74 s, series page 0.15 s. (The rest is the
   labels store reading all 50,000 decisions per request, 0.38 s:
   ``LabelsStore.current``, not this module's; reported.)
6. Converted Perfherder performance data with its alerts export
   (``triage convert --data data.json --alerts alerts.json``; 1,488
   signatures, 989,568 points): each alert compared the whole frame's series
   and commit columns to find its revision, O(alerts x points): 1,000 /
   4,000 alerts took 20.9 / 59.0 s (16,000: minutes). Now the rows of the
   revisions the summaries name are indexed once: 10.0 / 11.0 / 11.4 s for
   1,000 / 4,000 / 16,000 alerts, the same output byte for byte.
7. Scored many candidates with an SVM model (``triage train --model svm``)
   and explanations on (the default ``--explain 3``): the occlusion
   explanations built every row with each feature occluded at once, an
   (n, p, p) array and its copy: 16,501 candidates of the ``default``
   preset took 1.88 GB against 1.20 GB with ``--explain 0`` (4,125: +46 MB;
   100,000 would need ~4 GB more). Now in blocks of at most 65,536 occluded
   rows: 1.25 GB, the same scores and explanations byte for byte.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from triage.core.history import Dataset
from triage.workspace import alerts as alerts_mod


def _old_lasted(v: np.ndarray, i: int, mid: float, up: bool) -> int:
    """How long a change lasted, as the workspace computed it before (one median per commit)."""
    n = len(v)
    lasted = n - i
    for j in range(i, n - alerts_mod.SETTLE + 1):
        seen = v[j: j + alerts_mod.SETTLE]
        seen = seen[np.isfinite(seen)]
        if len(seen) == 0:
            continue
        m = float(np.median(seen))
        if (m < mid) if up else (m > mid):
            return j - i
    return lasted


def _staircase(n: int = 3000, steps: int = 30, seed: int = 0) -> tuple[Dataset, list[int]]:
    rng = np.random.default_rng(seed)
    at = np.linspace(n // (steps + 1), n - n // (steps + 1), steps).astype(int)
    level = np.zeros(n)
    for s in at:
        level[s:] += 1.0
    values = 1000 + 10 * level + rng.normal(0, 1, n)
    frame = pd.DataFrame({"series_id": "mem", "commit": [f"c{i}" for i in range(n)], "value": values})
    return Dataset.from_frame(frame), [int(s) for s in at]


class _CountingNumpy:
    """numpy, counting calls of ``median`` (the per-commit work of defect 1)."""

    def __init__(self) -> None:
        self.medians = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def median(self, *args, **kwargs):
        self.medians += 1
        return np.median(*args, **kwargs)


def test_1_alert_queue_medians_once_per_series_not_per_commit(tmp_path, monkeypatch):
    dataset, at = _staircase()
    cands = tmp_path / "cands.csv"
    pd.DataFrame({"series_id": "mem", "commit": [f"c{i}" for i in at]}).to_csv(cands, index=False)
    counting = _CountingNumpy()
    monkeypatch.setattr(alerts_mod, "np", counting)
    built = alerts_mod.build_alerts(dataset, cands)
    assert len(built) == len(at)
    # Before and after medians per alert, and the run medians once for the series: not one per
    # commit after each alert (every step of a staircase lasts to the end: ~45,000 medians here).
    assert counting.medians <= 3 * len(at) + 1
    for a in built:
        assert "stayed up to the end of the history" in a.reason


def test_1_how_long_a_change_lasted_is_unchanged(real_frame):
    """The sliced run medians give the old answer on real series (missing values included)."""
    ids = list(dict.fromkeys(real_frame["series_id"]))[::37]
    dataset = Dataset.from_frame(real_frame[real_frame["series_id"].isin(ids)])
    rng = np.random.default_rng(3)
    checked = 0
    for h in dataset:
        v = h.values.astype(float).copy()
        if len(v) > 40:
            v[rng.choice(len(v), size=len(v) // 10, replace=False)] = np.nan  # failed runs
            v[10:16] = np.nan  # a run of 5 with no value at all
        settled = alerts_mod.settle_medians(v)
        for i in range(1, len(v) - 1, max(1, len(v) // 25)):
            pre, post = v[max(0, i - 30): i], v[i: i + 30]
            pre, post = pre[np.isfinite(pre)], post[np.isfinite(post)]
            if not len(pre) or not len(post):
                continue
            before, after = float(np.median(pre)), float(np.median(post))
            mid, up = (before + after) / 2.0, after >= before
            back = np.flatnonzero(settled[i:] < mid if up else settled[i:] > mid)
            new = int(back[0]) if back.size else len(v) - i
            assert new == _old_lasted(v, i, mid, up), (h.series_id, i)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("n", [0, 1, 4, 5, 6])
def test_1_short_series(n):
    v = np.arange(n, dtype=float)
    assert len(alerts_mod.settle_medians(v)) == max(0, n - alerts_mod.SETTLE + 1)


# --------------------------------------------------------------------------- report (defects 2-4)


def _decisions_frame(history_ids: list[str], n: int, every: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for sid in history_ids:
        for i in range(1, n, every):
            p = round(float(rng.random()), 4)
            rows.append({"series_id": sid, "commit": f"c{i}", "index": i, "p_false": round(1 - p, 4), "p_true": p,
                         "classification": "true_positive" if p >= 0.5 else "false_positive", "label": ""})
    return pd.DataFrame(rows)


def _flat_dataset(ids: list[str], n: int) -> Dataset:
    rng = np.random.default_rng(1)
    frames = [pd.DataFrame({"series_id": sid, "commit": [f"c{i}" for i in range(n)],
                            "value": 100 + rng.normal(0, 1, n)}) for sid in ids]
    return Dataset.from_frame(pd.concat(frames))


def test_2_report_table_reads_each_series_confirmed_changes_once(monkeypatch):
    from triage import report
    from triage.core.history import History

    dataset = _flat_dataset(["a", "b"], 2000)
    decisions = _decisions_frame(["a", "b"], 2000, 10)
    calls = {"n": 0}
    original = History.confirmed

    def counting(self):
        calls["n"] += 1
        return original(self)

    monkeypatch.setattr(History, "confirmed", counting)
    page = report.render_html(decisions, [], title="t", source="s", n_candidates=None, omitted=0, dataset=dataset)
    assert page.count("<tr class=") == len(decisions) == 400
    assert calls["n"] <= 2  # once per series, not once per row (a scan of every label each time)
    # The same step as step_text alone gives.
    h = dataset["a"]
    assert report.html.escape(report.step_text(h, 11)) in page


def test_3_report_plot_writes_a_bounded_number_of_labels(tmp_path, monkeypatch):
    import matplotlib.axes

    from triage import report

    dataset = _flat_dataset(["a"], 3000)
    crowded = _decisions_frame(["a"], 3000, 3)  # 1,000 decisions on one series
    drawn = {"n": 0}
    original = matplotlib.axes.Axes.annotate

    def counting(self, *args, **kwargs):
        drawn["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "annotate", counting)
    report.plot_series(dataset["a"], tmp_path / "a.png", decisions=crowded)
    assert 1 <= drawn["n"] <= 40  # was 1,000 overlapping labels
    # The most likely alert's P(true) is among those written.
    chosen = report._annotated(crowded["index"].to_numpy(), crowded["p_true"].to_numpy(), 3000)
    assert int(np.argmax(crowded["p_true"].to_numpy())) in chosen
    # Few decisions far apart: every one keeps its label, as before.
    sparse = _decisions_frame(["a"], 3000, 500)
    drawn["n"] = 0
    report.plot_series(dataset["a"], tmp_path / "b.png", decisions=sparse)
    assert drawn["n"] == len(sparse)


def test_4_report_series_order_builds_one_set(tmp_path, monkeypatch):
    """Series with candidates but no decision: one set of the decided series, not one per candidate series."""
    from triage import report

    ids = [f"s{k}" for k in range(60)]
    dataset = _flat_dataset(ids, 30)
    decisions = _decisions_frame(ids[:30], 30, 10)
    decisions["index"] = decisions["index"].astype(np.int64)
    candidates = {sid: np.array([5, 15]) for sid in ids}
    built = {"n": 0}

    class CountingSet(set):
        def __init__(self, *args):
            built["n"] += 1
            super().__init__(*args)

    monkeypatch.setattr(report, "set", CountingSet, raising=False)
    monkeypatch.setattr(report, "plot_series", lambda *a, **k: None)
    report.build_report(dataset, decisions, tmp_path / "rep", candidates=candidates, max_plots=100)
    assert built["n"] < 10  # was one per series with candidates (60 here; 20,000 series: 15 s)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert all(f'id="{sid}"' in page for sid in ids)  # every series still gets its section


# --------------------------------------------------------------------------- workspace (defect 5)


def _workspace(tmp_path, n_series: int = 6, per_series: int = 60):
    import warnings

    from triage.workspace.app import Workspace, create_app
    from triage.workspace.store import LabelsStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    ids = [f"s{k}" for k in range(n_series)]
    dataset = _flat_dataset(ids, 10 * per_series)
    cands = tmp_path / "cands.csv"
    pd.DataFrame([{"series_id": sid, "commit": f"c{i}"} for sid in ids for i in range(5, 10 * per_series, 10)]
                 ).to_csv(cands, index=False)
    built = alerts_mod.build_alerts(dataset, cands)
    ws = Workspace(dataset=dataset, alerts=built, store=LabelsStore(tmp_path / "labels.sqlite"),
                   commit_url="https://example.org/c/{commit}")
    return ws, TestClient(create_app(ws))


def test_5_queue_builds_rows_only_for_the_alerts_it_shows(tmp_path, monkeypatch):
    from triage.workspace import app

    ws, client = _workspace(tmp_path)
    assert len(ws.alerts) == 360
    ws.store.record(ws.alerts[7].series_id, ws.alerts[7].commit, "true", who="ann")
    linked = {"n": 0}
    original = app.Workspace.commit_link

    def counting(self, commit):
        linked["n"] += 1
        return original(self, commit)

    monkeypatch.setattr(app.Workspace, "commit_link", counting)
    page = client.get("/?limit=50")
    assert page.status_code == 200
    assert linked["n"] == 50  # was one per alert of the workspace (360)
    assert "360 alerts: 359 untriaged, 1 true, 0 false, 0 unsure" in " ".join(page.text.split())
    assert "showing 50 of 360 matching alerts" in page.text
    decided = client.get("/?status=true")
    assert "showing 1 of 1 matching alerts" in decided.text and ws.alerts[7].commit in decided.text


def test_5_series_page_reads_its_own_alerts(tmp_path):
    ws, client = _workspace(tmp_path)

    class CountingList(list):
        walks = 0

        def __iter__(self):
            CountingList.walks += 1
            return super().__iter__()

    own = [a.commit for a in ws.alerts if a.series_id == "s3"]
    ws.alerts = CountingList(ws.alerts)
    page = client.get("/series?id=s3")
    assert page.status_code == 200
    assert CountingList.walks == 0  # was a scan of every alert of the workspace per series page
    assert len(own) == 60 and all(c in page.text for c in own)


# --------------------------------------------------------------------------- perfherder (defect 6)


def test_6_perfherder_alerts_found_without_a_scan_per_alert(tmp_path, monkeypatch):
    import json

    from triage.readers.perfherder import read_perfherder_data

    rng = np.random.default_rng(0)
    data = {f"sig{s}": [{"revision": f"r{i}", "push_timestamp": f"2024-01-01T{i // 60:02d}:{i % 60:02d}:00",
                         "value": float(100 + rng.normal())} for i in range(300)] for s in range(4)}
    data["sig1"].insert(51, {"revision": "r50", "push_timestamp": "2024-01-01T00:50:30", "value": 100.0})  # a retrigger
    (tmp_path / "data.json").write_text(json.dumps(data))
    statuses = {("sig1", "r50"): 2, ("sig2", "r7"): 3}
    summaries = [{"revision": f"r{i}", "alerts": [{"status": 1, "series_signature": {"signature_hash": f"sig{i % 4}"}}]}
                 for i in range(10, 290, 4)]
    summaries += [{"revision": r, "alerts": [{"status": st, "series_signature": {"signature_hash": s}}]}
                  for (s, r), st in statuses.items()]
    (tmp_path / "alerts.json").write_text(json.dumps({"results": summaries}))
    scans = {"n": 0}
    original = pd.Series.__eq__

    def counting(self, other):
        scans["n"] += 1
        return original(self, other)

    monkeypatch.setattr(pd.Series, "__eq__", counting)
    ds = read_perfherder_data(tmp_path / "data.json", alerts=tmp_path / "alerts.json")
    assert scans["n"] < 10  # was two whole-column comparisons per alert (148 here)
    monkeypatch.undo()
    from triage.core import labels as L

    h = ds["sig1"]
    assert h.labels[h.index_of("r50")] == L.normalise_label(2)  # the retriggered revision labelled once, as one commit
    assert ds["sig2"].labels[ds["sig2"].index_of("r7")] == L.normalise_label(3)
    assert ds["sig2"].labels[ds["sig2"].index_of("r10")] == L.normalise_label(1)
    assert sum(int((x.labels != L.NONE).sum()) for x in ds) == len(summaries)


# --------------------------------------------------------------------------- SVM explanations (defect 7)


def test_7_svm_occlusion_in_bounded_blocks(monkeypatch):
    from test_batch_label import _matrix, trained_model

    from triage import explain as explain_mod
    from triage.training.model_files import load_model

    clf = load_model(trained_model("svm"))
    rows = _matrix().iloc[:40]
    whole = explain_mod.contributions(clf, rows)
    p = len(clf.feature_names_)
    pipe = clf.estimator_
    sizes: list[int] = []
    original = pipe.decision_function

    def recording(X):
        sizes.append(len(X))
        return original(X)

    monkeypatch.setattr(pipe, "decision_function", recording)
    monkeypatch.setattr(explain_mod, "OCCLUDED_ROWS", 4 * p, raising=False)
    blocked = explain_mod.contributions(clf, rows)
    # No call holds every row with every feature occluded (40 + 40 p + 1 rows before).
    assert max(sizes) <= max(len(rows) + 1, 4 * p)
    np.testing.assert_array_equal(blocked.values, whole.values)
    np.testing.assert_array_equal(blocked.bias, whole.bias)
    np.testing.assert_array_equal(blocked.score, whole.score)
