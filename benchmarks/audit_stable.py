"""How many "false" candidates in the stable stretches look like real, lasting level shifts.

The real-data benchmark (``bench_real.py``, ``--mode stable``) injects shifts
into stretches that a conservative segmentation finds stable, and counts a
candidate false when no injected change is within 5 commits. A real change
that the segmentation missed is then a "false" candidate that no classifier
should call false: label noise that caps the candidate AUC. This script
counts, per source project and detector, the false candidates whose shift
is large and lasting, on the same measures the scoring model reads
(``features/candidate_context.py``): a shift of at least ``--min-shift``
robust standard deviations on 30-commit windows (``ctx_far_shift``) that still
holds 10-20 commits later (``ctx_persist_after`` between 0.5 and 1.5), and,
for comparison, the share of the true (injected) candidates that pass the
same test. The false ones are also counted apart when they lie more than 30
commits from every injected change, so that no injected shift is inside
their 30-commit windows. ``--mode stable-global`` audits the first
segmentation (the one that motivated ``stable``). Nothing here is chosen or tuned; it reads the detectors' output
cached by ``bench_real.py`` (run it first)::

    nice .venv/bin/python benchmarks/audit_stable.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_real  # noqa: E402
import real_data  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--detectors", default="perfherder,edivisive,binseg", help="comma-separated registry names")
    ap.add_argument("--min-shift", type=float, default=3.0, help="robust sd on 30-commit windows (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=("stable", "stable-global"), default="stable",
                    help="the segmentation whose stretches are audited (default stable)")
    args = ap.parse_args(argv)
    try:
        real = real_data.load_real()
    except real_data.RealDataMissing as exc:
        print(exc)
        return
    wanted = [d.strip() for d in args.detectors.split(",") if d.strip()]
    parts = real_data.split(real_data.inject(real, mode=args.mode, seed=args.seed))
    print(f"Candidates in {args.mode} stretches (seed {args.seed}) with a lasting shift >= {args.min_shift:g} robust sd "
          "(30-commit windows, still holding 10-20 commits later):\n")
    print("| detector | project | false candidates | ... lasting shift | ... of them > 30 commits from an injected change "
          "| true candidates | ... lasting shift |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for part, data in parts.items():
        found = bench_real.cached_detections(data, f"{args.mode}_s{args.seed}_e1_{part}", 2, print)
        for det in wanted:
            rows = bench_real.candidate_rows(data, found[det], det)
            rows["source"] = rows["series_id"].map(real_data.source_of)
            rows["far"] = bench_real.far_from_injected(data, rows)
            for src, g in rows.groupby("source"):
                f, t = g[g["y"] == 0], g[g["y"] == 1]
                lf_mask = bench_real.lasting_shift(f, args.min_shift)
                lf, lt = int(lf_mask.sum()), int(bench_real.lasting_shift(t, args.min_shift).sum())
                far = int((lf_mask & f["far"].to_numpy()).sum())
                print(f"| {det} | {src} | {len(f)} | {lf} ({lf / max(len(f), 1):.0%}) | {far} | {len(t)} | "
                      f"{lt} ({lt / max(len(t), 1):.0%}) |")


if __name__ == "__main__":
    main()
