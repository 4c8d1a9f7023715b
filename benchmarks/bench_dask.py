"""Throughput of the online replay (``triage detect``) on 1 and 2 local dask workers.

The history is a slice of the ``default`` synthetic preset (MongoDB-sized:
7,800 series of 100-600 commits); ``--series`` picks how many of its series
(the whole preset takes long on a shared 2-core machine). The replay runs
through :func:`triage.distributed.map_frames` on a ``LocalCluster`` with 1,
then 2, single-threaded worker processes, and once in this process without
dask. Cluster start-up is timed apart from the replay; each worker loads the
model and compiles its predictor once per process (included in the replay
time, as a real worker would pay it once per start).

    nice .venv/bin/python benchmarks/bench_dask.py --series 600
    nice .venv/bin/python benchmarks/bench_dask.py --series 0 --skip-in-process   # the whole preset
    nice .venv/bin/python benchmarks/bench_dask.py --series 0 --skip-dask --model default-w0

``--skip-in-process`` leaves out the run without dask (the 2-worker result is
then checked against the 1-worker one); ``--skip-dask`` runs only the
in-process replay (its CPU seconds and this process's peak RSS are printed,
with the number of change points and a SHA-256 of them to compare with a dask
run's). ``--model`` is any ``--model`` name (default: the online default; the
whole-preset dask runs of 2026-11-23 used ``default-w0``, the default then).
The load average is printed before and after each run, since the machine may
be shared.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import time

import pandas as pd

from triage.distributed import map_frames
from triage.model_lookup import resolve_model
from triage.online.loop import FOUND_COLUMNS, replay_in_processes
from triage.synthetic import generate

# The digest's columns: those of the earlier runs' digests (the alarm's levels came later).
COLUMNS = ["series_id", "commit", "index", "probability"]


def _replay(part, model_dir):
    return pd.DataFrame(replay_in_processes(model_dir, part, jobs=1), columns=list(FOUND_COLUMNS))[COLUMNS]


def _load() -> str:
    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def _digest(frame: pd.DataFrame) -> str:
    """SHA-256 of the change points (series, commit, index, rounded probability)."""
    rows = frame.assign(probability=frame["probability"].round(9)).to_csv(index=False)
    return hashlib.sha256(rows.encode()).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=600, help="series of the default preset to replay (0 = all)")
    ap.add_argument("--skip-in-process", action="store_true", help="no run without dask (check 2 workers against 1)")
    ap.add_argument("--skip-dask", action="store_true", help="only the in-process replay")
    ap.add_argument("--model", default="default", help="online model (a --model name; default: the online default)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    full = generate("default", seed=args.seed)
    data = full.subset(full.series_ids[: args.series]) if args.series else full
    n_commits = data.n_commits()
    model_dir = resolve_model(args.model, "online")
    print(f"{len(data)} series, {n_commits:,} commits (default preset, seed {args.seed}); {os.cpu_count()} cores; "
          f"{_load()}; model {model_dir.name}", flush=True)
    ref = None
    if not args.skip_in_process:
        t, cpu = time.perf_counter(), time.process_time()
        ref = _replay(data, model_dir)
        base, cpu = time.perf_counter() - t, time.process_time() - cpu
        # ru_maxrss is in KiB on Linux: the peak of this process, data generation included.
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{'in process, no dask':24} replay {base:7.1f} s  {n_commits / base:9,.0f} commits/s  "
              f"CPU {cpu:.1f} s  peak RSS {rss:,.0f} MiB  {len(ref):,} change points (sha256 {_digest(ref)})  "
              f"{_load()}", flush=True)
    if args.skip_dask:
        return
    from distributed import Client, LocalCluster

    for workers in (1, 2):
        t = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            start = time.perf_counter() - t
            t = time.perf_counter()
            out = map_frames(_replay, data, client.scheduler.address, model_dir, n_partitions=4 * workers)
            run = time.perf_counter() - t
        if ref is None:
            ref, what = out, "(reference for 2 workers)"
        else:
            what = f"same change points as {'1 worker' if args.skip_in_process else 'in process'}: {out.equals(ref)}"
        print(f"{f'{workers} worker(s)':24} replay {run:7.1f} s  {n_commits / run:9,.0f} commits/s  "
              f"(cluster start {start:.1f} s; {what}; {len(out):,} change points, sha256 {_digest(out)})  "
              f"{_load()}", flush=True)


if __name__ == "__main__":
    main()
