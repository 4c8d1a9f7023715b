"""Reading the real histories as shipped: gzip-compressed, with re-runs merged into their commits.

    .venv/bin/python benchmarks/bench_readers.py [--data ../shared/data/real/histories.csv.gz] [--repeat 3]

Prints, for the compressed file and for the same content uncompressed (a
temporary copy): series, commits, commits measured more than once (re-runs,
merged), and the best wall and CPU time of ``triage.loaders.load`` over the
repeats. Skips with a message when the real data is absent.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import time
from pathlib import Path

from triage.loaders import load

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "real" / "histories.csv.gz"


def timed(path: Path, repeat: int) -> tuple[float, float, object]:
    best_wall = best_cpu = float("inf")
    dataset = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        dataset = load(path)
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (../shared/data/real beside the checkout)")
        sys.exit(0)
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "histories.csv"
        with gzip.open(args.data, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        print("| input | series | commits | commits with re-runs merged | wall (best) | CPU (best) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, path in ((args.data.name, args.data), ("uncompressed copy", plain)):
            wall, cpu, dataset = timed(path, args.repeat)
            rerun = sum(int((h.n_measurements > 1).sum()) for h in dataset)
            print(f"| {name} | {len(dataset):,} | {dataset.n_commits():,} | {rerun:,} | {wall:.2f} s | {cpu:.2f} s |")


if __name__ == "__main__":
    main()
