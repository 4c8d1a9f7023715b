"""The triage workspace on the 372 real histories (BENCHMARKS.md, "Triage workspace").

Loads ``../shared/data/real/histories.csv.gz`` (skips, saying so, when the
folder is absent), runs Mozilla Perfherder's detector (``perfherder``, the
t-test of :mod:`triage.detectors.windowed`) over every series for the
candidates, scores them with the bundled ``default-adaptive`` model and
builds the workspace exactly as ``triage serve`` does. Then, through
Starlette's test client (in process, no network): the queue page (all
alerts rendered), a filtered queue page, a series page, its PNG plot, and
one decision POST (one SQLite transaction) with its redirect, each timed
``--repeats`` times; the median is reported.

Usage::

    .venv/bin/python -m benchmarks.bench_workspace --repeats 20
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
MODEL = Path(__file__).resolve().parents[1] / "models" / "default-adaptive"


def timed(fn, repeats: int) -> float:
    """Median wall seconds of ``fn()`` over ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--detector", default="perfherder")
    args = parser.parse_args()
    if not (SHARED / "histories.csv.gz").is_file():
        print(f"skipped: {SHARED}/histories.csv.gz is absent (../shared beside the checkout)")
        return
    from triage.cli.detectors import candidates_frame
    from triage.core.atomic import write_csv_atomic
    from triage.inference import load_classifier
    from triage.loaders import load
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace, create_app
    from triage.workspace.store import LabelsStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    t0 = time.perf_counter()
    dataset = load(SHARED / "histories.csv.gz")
    t_load = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        cands = write_csv_atomic(candidates_frame(dataset, args.detector), Path(tmp) / "candidates.csv")
        t_detect = time.perf_counter() - t0
        t0 = time.perf_counter()
        alerts = build_alerts(dataset, cands, load_classifier(MODEL))
        t_alerts = time.perf_counter() - t0
        ws = Workspace(dataset=dataset, alerts=alerts, store=LabelsStore(Path(tmp) / "labels.sqlite"),
                       model_name="default-adaptive", sheriff="bench")
        client = TestClient(create_app(ws))
        busiest = max(dataset.series_ids, key=lambda s: sum(a.series_id == s for a in alerts))
        n_busiest = sum(a.series_id == busiest for a in alerts)
        queue_bytes = len(client.get("/", params={"limit": 10_000}).content)
        k = iter(range(10**9))

        def decide() -> None:
            a = alerts[next(k) % len(alerts)]
            r = client.post("/decide", data={"csrf": ws.csrf, "series_id": a.series_id, "commit": a.commit,
                                              "decision": "true", "who": "bench"}, follow_redirects=False)
            assert r.status_code == 303

        rows = [
            (f"queue, all {len(alerts):,} alerts ({queue_bytes / 1e6:.1f} MB of HTML)",
             timed(lambda: client.get("/", params={"limit": 10_000}), args.repeats)),
            ("queue, first page (200 rows)", timed(lambda: client.get("/"), args.repeats)),
            ("queue filtered (regressions, untriaged)",
             timed(lambda: client.get("/", params={"direction": "regression", "status": "untriaged"}), args.repeats)),
            (f"series page ({n_busiest} alerts)", timed(lambda: client.get("/series", params={"id": busiest}), args.repeats)),
            (f"series plot PNG ({len(dataset[busiest]):,} commits)",
             timed(lambda: client.get("/plot.png", params={"id": busiest}), args.repeats)),
            ("decision POST (one SQLite transaction) + 303", timed(decide, args.repeats)),
        ]
    directions = {d: sum(a.direction == d for a in alerts) for d in ("regression", "improvement", "none")}
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"data: {len(dataset):,} real series, {dataset.n_commits():,} commits; load {t_load:.1f} s")
    print(f"detector {args.detector}: {len(alerts):,} alerts in {t_detect:.1f} s; scoring + reasons {t_alerts:.1f} s")
    print(f"directions: {directions}")
    print("| request | median ms |\n| --- | ---: |")
    for name, sec in rows:
        print(f"| {name} | {sec * 1000:.1f} |")


if __name__ == "__main__":
    main()
