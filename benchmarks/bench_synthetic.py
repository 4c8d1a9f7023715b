"""Wall time to generate, write and load the default synthetic benchmark.

Run: .venv/bin/python benchmarks/bench_synthetic.py [--preset default] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

from triage.loaders import load
from triage.synthetic import generate_frame, write_synthetic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    t0 = time.perf_counter()
    frame = generate_frame(args.preset, args.seed)
    t_gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        path = write_synthetic(tmp, args.preset, args.seed)
        t_write = time.perf_counter() - t0
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        dataset = load(path)
        t_load = time.perf_counter() - t0
    counts = dataset.label_counts()
    triaged = counts["true_positive"] + counts["false_positive"]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"preset {args.preset!r} seed {args.seed}: {len(dataset):,} series, {dataset.n_commits():,} commits, "
          f"{len(frame):,} measurement rows, {triaged:,} triaged candidates {counts}")
    print(f"generate rows: {t_gen:.1f} s; generate + write parquet ({size / 1e6:.1f} MB): {t_write:.1f} s; "
          f"load + validate: {t_load:.1f} s")


if __name__ == "__main__":
    main()
