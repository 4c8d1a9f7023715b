"""Which commit the online loop's alarms name, on the untouched real histories (a diagnostic).

One command regenerates the figure in BENCHMARKS.md, "Online loop on real data"::

    nice .venv/bin/python benchmarks/bench_online_location.py

TCPDBench's margin of 5 commits counts an alarm one or two commits early as
found; a sheriff bisecting from it starts at the wrong commit. This runs
``triage detect`` (the bundled ``online-w4``, defaults) on the 372 real
histories and counts the alarms whose commit's own value is nearer the level
before it (median of the 10 commits before) than the level after it (median
of the next 4, what the K = 4 After window held): the step comes after the
commit named. The same count for ``perfherder``'s candidates, which see 12
commits after, is the reference.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_data  # noqa: E402

from triage.loaders import load  # noqa: E402


def early(values: np.ndarray, index: int, before: int = 10, after: int = 4) -> bool:
    """Whether ``values[index]`` is nearer the median of the ``before`` commits before it than of the ``after`` after."""
    if index <= 0 or index + 1 >= len(values):
        return False
    pre = float(np.median(values[max(0, index - before) : index]))
    nxt = float(np.median(values[index + 1 : index + 1 + after]))
    return abs(values[index] - pre) < abs(values[index] - nxt)


def count(data, found: pd.DataFrame) -> tuple[int, int]:
    """(alarms naming a commit before the step, alarms)."""
    n = sum(early(data[str(s)].values, int(i)) for s, i in zip(found["series_id"], found["index"], strict=True))
    return n, len(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=real_data.real_dir() / "histories.csv.gz")
    args = ap.parse_args(argv)
    triage = str(Path(sys.executable).with_name("triage"))
    data = load(args.data)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in (
            ("online loop (`triage detect`, online-w4, K = 4)", ["detect", "--data", str(args.data)]),
            ("perfherder (`triage candidates`)", ["candidates", "--data", str(args.data), "--detector", "perfherder"]),
        ):
            out = Path(tmp) / "found.csv"
            subprocess.run([triage, *cmd, "--out", str(out)], check=True, capture_output=True)
            n, total = count(data, pd.read_csv(out, dtype={"series_id": str, "commit": str}))
            rows.append(f"| {name} | {total} | {n} | {100.0 * n / max(total, 1):.1f} % |")
    print("| alarms of | alarms | naming a commit before the step | share |")
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
