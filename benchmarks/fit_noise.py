"""Fit the noise profiles of the ``realnoise`` synthetic preset to the real histories.

Run: .venv/bin/python benchmarks/fit_noise.py [--data ../shared/data/real] [--out triage/noise_profiles.json]

Reads ``histories.csv.gz`` (372 real series, five source projects), measures
each series with :func:`triage.noise_profiles.series_noise_stats` and writes
one profile per source project: numbers only, never the data. Skips with a
message when ``../shared`` is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.atomic import write_text_atomic
from triage.noise_profiles import PROFILE_FILE, SERIES_PARAMS, fit_profile, series_noise_stats

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "real"


def read_real(data_dir: Path) -> dict[str, np.ndarray]:
    """One value per commit per series, in first-measurement order.

    A commit measured twice (re-runs, even non-consecutive, in ``rhai`` and
    ``otel-java``) is one commit: the mean of its values, at its first position.
    """
    frame = pd.read_csv(data_dir / "histories.csv.gz", usecols=["series_id", "commit", "value"])
    per_commit = frame.groupby(["series_id", "commit"], sort=False)["value"].mean()
    return {sid: grp.to_numpy() for sid, grp in per_commit.groupby(level=0, sort=False)}


def source_of(series_id: str) -> str:
    return series_id.split("/", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "triage" / PROFILE_FILE)
    args = parser.parse_args()
    if not (args.data / "histories.csv.gz").is_file():
        print(f"skipped: {args.data / 'histories.csv.gz'} is absent (the real histories live in ../shared/data/real/)")
        return 0
    t0 = time.perf_counter()
    series = read_real(args.data)
    by_source: dict[str, list[dict]] = {}
    for sid, values in series.items():
        by_source.setdefault(source_of(sid), []).append(series_noise_stats(values))
    profiles = {
        "fitted_by": "benchmarks/fit_noise.py",
        "data": "../shared/data/real/histories.csv.gz",
        "series_params": list(SERIES_PARAMS),
        "sources": {src: fit_profile(stats) for src, stats in sorted(by_source.items())},
    }
    write_text_atomic(json.dumps(profiles, indent=1) + "\n", args.out)
    print(f"fitted {len(series)} series of {len(by_source)} sources in {time.perf_counter() - t0:.1f} s -> {args.out}")
    for src, p in profiles["sources"].items():
        q = p["quantiles"]
        print(f"  {src:14s} {p['series']:4d} series; median robust CV {np.exp(q['log_cv'][10]):.4f}, "
              f"median shifts/100 commits {100 * q['shift_rate'][10]:.2f}, machine share {p['machine_share']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
