"""Large real steps that `perfherder` flags and the online loop does not (a diagnostic, development projects only).

One command regenerates the figure in BENCHMARKS.md, "Online loop on real data"::

    nice .venv/bin/python benchmarks/bench_online_misses.py

The benchmark's F1 counts changes injected into stable stretches; the real
histories hold their own, unlabelled steps. This looks at those, on the
fitting and validation projects only (the test projects stay unseen): it runs
``triage candidates --detector perfherder`` and ``triage detect`` (the bundled
``online-w4``, defaults) on the untouched histories, keeps the `perfherder`
candidates whose step is large (median of the 10 commits from it against the
median of the 10 before: at least ``--min-rel`` of the level and ``--min-mads``
MADs of the 10 before), and counts those with no loop alarm within 5 commits
(TCPDBench's margin). For scale it also counts, in the same histories, the
commits where a plain separation rule would fire: all K + 1 = 5 values from
the commit on outside the range of the 20 before it, their median at least
20 % off the 20's (one firing per 10 commits): how many of those are away from
every loop alarm, and how many of those sit near a `perfherder` candidate.
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

from triage.core.noise import robust_sd  # noqa: E402
from triage.loaders import load  # noqa: E402

MARGIN = 5


def large_steps(values: np.ndarray, index: np.ndarray, min_rel: float, min_mads: float, span: int = 10) -> np.ndarray:
    """The candidates of ``index`` (positions in ``values``) whose step is large, as a boolean mask."""
    keep = np.zeros(len(index), dtype=bool)
    for k, i in enumerate(index.tolist()):
        pre, post = values[max(0, i - span) : i], values[i : i + span]
        if len(pre) < 3 or len(post) < 3:
            continue
        before, after = float(np.median(pre)), float(np.median(post))
        mad = robust_sd(pre)
        rel = abs(after / before - 1.0) if before else np.inf
        keep[k] = rel >= min_rel and abs(after - before) >= min_mads * mad
    return keep


def separated(values: np.ndarray, n_pre: int = 20, k: int = 4, min_rel: float = 0.2) -> list[int]:
    """Commits where all ``k + 1`` values from it on lie outside the range of the ``n_pre`` before it."""
    out: list[int] = []
    i = n_pre
    while i + k < len(values):
        pre, after = values[i - n_pre : i], values[i : i + k + 1]
        med = float(np.median(pre))
        if (after.max() < pre.min() or after.min() > pre.max()) and med and abs(np.median(after) / med - 1) >= min_rel:
            out.append(i)
            i += k + 6  # one firing per step
            continue
        i += 1
    return out


def near(i: int, others: np.ndarray) -> bool:
    return bool(others.size) and bool(np.min(np.abs(others - i)) <= MARGIN)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=real_data.real_dir() / "histories.csv.gz")
    ap.add_argument("--min-rel", type=float, default=0.15, help="a large step: at least this share of the level")
    ap.add_argument("--min-mads", type=float, default=5.0, help="... and at least this many MADs of the 10 before")
    args = ap.parse_args(argv)
    triage = str(Path(sys.executable).with_name("triage"))
    raw = pd.read_csv(args.data, dtype={"series_id": str, "commit": str})
    raw = raw[[real_data.part_of(s) != "test" for s in raw["series_id"]]]
    found: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory() as tmp:
        dev = Path(tmp) / "dev.csv"
        raw.to_csv(dev, index=False)
        data = load(dev)  # re-runs merged as every command merges them
        for name, cmd in (("loop", ["detect", "--data", str(dev)]),
                          ("perfherder", ["candidates", "--data", str(dev), "--detector", "perfherder"])):
            out = Path(tmp) / f"{name}.csv"
            subprocess.run([triage, *cmd, "--out", str(out)], check=True, capture_output=True)
            found[name] = pd.read_csv(out, dtype={"series_id": str, "commit": str})
    by = {name: {str(s): g["index"].to_numpy(dtype=np.int64) for s, g in f.groupby("series_id")}
          for name, f in found.items()}
    empty = np.empty(0, dtype=np.int64)
    rows = []
    for project in sorted({real_data.source_of(h.series_id) for h in data}):
        hs = [h for h in data if real_data.source_of(h.series_id) == project]
        n_commits = sum(len(h) for h in hs)
        big = missed = series_missed = fired = fired_new = fired_new_ph = 0
        for h in hs:
            loop, ph = by["loop"].get(h.series_id, empty), by["perfherder"].get(h.series_id, empty)
            steps = ph[large_steps(h.values, ph, args.min_rel, args.min_mads)]
            misses = [i for i in steps.tolist() if not near(i, loop)]
            big += len(steps)
            missed += len(misses)
            series_missed += bool(misses)
            for i in separated(h.values):
                fired += 1
                if not near(i, loop):
                    fired_new += 1
                    fired_new_ph += near(i, ph)
        rows.append((project, real_data.part_of(hs[0].series_id), len(hs), n_commits,
                     sum(len(by["loop"].get(h.series_id, empty)) for h in hs),
                     sum(len(by["perfherder"].get(h.series_id, empty)) for h in hs),
                     big, missed, series_missed, fired, fired_new, fired_new_ph))
    print(f"large: >= {args.min_rel:.0%} of the level and >= {args.min_mads:g} MADs; near: within {MARGIN} commits")
    print("| project | part | series | commits | loop alarms | perfherder candidates | large perfherder steps "
          "| no loop alarm near | in series | separation rule fires | away from loop alarms | of those near perfherder |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    total = [sum(r[k] for r in rows) for k in range(2, len(rows[0]))]
    print("| all | | " + " | ".join(str(x) for x in total) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
