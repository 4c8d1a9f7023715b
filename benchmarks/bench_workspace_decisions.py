"""`triage serve`'s start-up and a decision's cost with a large labels store (BENCHMARKS.md, "Triage workspace").

500 synthetic series of 2,000 commits and one of 100,000 (a candidate every
20th / 50th commit, 52,000 alerts, no model) and a store of 50,000
decisions, half true: how long reading the store, building the alerts and
the workspace (which words every decided series' reasons again with its
sheriffs' decisions) take, then a decision on the long series and on a
short one, through the app's test client.

    nice .venv/bin/python benchmarks/bench_workspace_decisions.py
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.workspace.alerts import build_alerts
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore


def _dataset() -> Dataset:
    rng = np.random.default_rng(1)
    histories = []
    for s in range(500):
        n = 2000
        values = 100 + rng.normal(0, 1, n) + np.repeat(rng.normal(0, 5, n // 20), 20)
        labels = np.full(n, L.NONE, dtype=object)
        labels[::20] = L.NOT_TRIAGED
        histories.append(History(f"s{s:03d}", [f"c{i}" for i in range(n)], values, labels, higher_is_better=False))
    n = 100_000
    values = 100 + rng.normal(0, 1, n) + np.repeat(rng.normal(0, 5, n // 50), 50)
    labels = np.full(n, L.NONE, dtype=object)
    labels[::50] = L.NOT_TRIAGED
    histories.append(History("big", [f"b{i}" for i in range(n)], values, labels, higher_is_better=False))
    return Dataset(histories, source="<bench_workspace>")


def _store(path: Path) -> int:
    LabelsStore(path).close()
    when = "2026-01-01T00:00:00+00:00"
    rows = [(f"s{s:03d}", f"c{i}", L.TRUE_POSITIVE if (i // 20) % 2 == 0 else L.FALSE_POSITIVE, "", "ann", when)
            for s in range(500) for i in range(0, 2000, 20)][:49_000]
    rows += [("big", f"b{i}", L.TRUE_POSITIVE, "", "ann", when) for i in range(0, 50_000, 50)]
    with sqlite3.connect(path) as con:
        con.executemany("INSERT INTO decisions (series_id, commit_id, label, note, who, decided_at) "
                        "VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.close()
    return len(rows)


def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Starlette suggests another HTTP client for its test client
        from starlette.testclient import TestClient

    dataset = _dataset()
    with tempfile.TemporaryDirectory() as tmp:
        n = _store(Path(tmp) / "labels.sqlite")
        t0 = time.perf_counter()
        store = LabelsStore(Path(tmp) / "labels.sqlite")
        decided = list(store.current())
        t1 = time.perf_counter()
        alerts = build_alerts(dataset, decided=decided)
        t2 = time.perf_counter()
        ws = Workspace(dataset=dataset, alerts=alerts, store=store)
        t3 = time.perf_counter()
        print(f"{n:,} decisions, {len(alerts):,} alerts: reading the store {t1 - t0:.2f} s, build_alerts "
              f"{t2 - t1:.2f} s, Workspace() {t3 - t2:.2f} s")
        client = TestClient(create_app(ws))
        for sid, commit, decision in (("big", "b60000", "true"), ("big", "b60050", "true"), ("big", "b60000", "false"),
                                      ("s001", "c1980", "true")):
            t0 = time.perf_counter()
            r = client.post("/decide", data={"csrf": ws.csrf, "series_id": sid, "commit": commit, "decision": decision,
                                             "who": "ann", "next": "/"}, follow_redirects=False)
            print(f"decide {decision} on {sid} ({len(dataset[sid]):,} commits, {len(ws.by_series[sid]):,} alerts): "
                  f"HTTP {r.status_code}, {time.perf_counter() - t0:.3f} s")
        store.close()


if __name__ == "__main__":
    main()
