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

``--compare-segmentations 2,4,6,8,12,16`` instead compares segmentations
before any detector runs, on the development projects only (django-asv,
emg3d-bench, rhai; the test projects are not read): per segmentation the
stretches and commits it keeps and how many stretches hold a commit with a
lasting shift (the same test, on every commit >= 30 from the stretch's
ends), with ``stable-global`` and the same stretches shuffled (no level
structure left) as references. This is how ``stable``'s scale and penalty
were chosen::

    nice .venv/bin/python benchmarks/audit_stable.py --compare-segmentations 2,4,6,8,12,16
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_real  # noqa: E402
import real_data  # noqa: E402

DEVELOPMENT: tuple[str, ...] = ("django-asv", "emg3d-bench", "rhai")


def lasting_commits(values: np.ndarray, min_shift: float = 3.0, far: int = 30) -> int:
    """Commits p (>= ``far`` from both ends) with a lasting shift, as :func:`bench_real.lasting_shift` reads it.

    The shift: |median of the ``far`` commits from p - median of the ``far``
    before| over the 1.4826 MAD of those before (``ctx_far_shift``'s measure,
    :func:`shift_profile`); lasting: the candidate's own ``ctx_persist_after``
    between 0.5 and 1.5.
    """
    from triage.features.candidate_context import CONTEXT_COLUMNS, context_block, shift_profile

    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2 * far + 1:
        return 0  # no commit has far commits on both sides
    at = np.arange(far, len(x) - far + 1)
    at = at[shift_profile(x, far)[at - far] >= min_shift]  # profile entry i is commit far + i
    if at.size == 0:
        return 0
    persist = context_block(x, at)[:, CONTEXT_COLUMNS.index("ctx_persist_after")]
    return int(((persist >= 0.5) & (persist <= 1.5)).sum())


def compare_segmentations(factors: list[float]) -> None:
    real = real_data.load_real(sources=DEVELOPMENT)
    rng = np.random.default_rng(0)
    print(f"Stretches of >= 80 commits on the development projects ({', '.join(DEVELOPMENT)}; {len(real)} series, "
          f"{real.n_commits():,} commits) holding a commit with a lasting shift >= 3 robust sd:\n")
    print("| segmentation | stretches | commits | stretches with a lasting shift | commits with one per 1,000 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    looks: list[tuple[str, real_data.InjectionConfig, str, bool]] = [
        ("stable-global (whole-series MAD, 10 log n)", real_data.InjectionConfig(), "global", False)]
    for f in factors:
        looks.append((f"stable: noise units, {f:g} log n", dataclasses.replace(real_data.InjectionConfig(),
                      penalty_factor=f), "noise", False))
    looks.append(("stable, default penalty, values shuffled (reference)", real_data.InjectionConfig(), "noise", True))
    for name, cfg, scale, shuffle in looks:
        n_stretch = n_commits = n_with = n_pos = 0
        for h in real:
            for a, b in real_data.stable_stretches(h.values, cfg, scale):
                seg = rng.permutation(h.values[a:b]) if shuffle else h.values[a:b]
                k = lasting_commits(seg)
                n_stretch, n_commits, n_with, n_pos = n_stretch + 1, n_commits + b - a, n_with + (k > 0), n_pos + k
        print(f"| {name} | {n_stretch} | {n_commits:,} | {n_with} ({n_with / max(n_stretch, 1):.0%}) | "
              f"{1000 * n_pos / max(n_commits, 1):.2f} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--detectors", default="perfherder,edivisive,binseg", help="comma-separated registry names")
    ap.add_argument("--min-shift", type=float, default=3.0, help="robust sd on 30-commit windows (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=("stable", "stable-global"), default="stable",
                    help="the segmentation whose stretches are audited (default stable)")
    ap.add_argument("--compare-segmentations", default="",
                    help="comma-separated penalty factors of stable to compare on the development projects")
    args = ap.parse_args(argv)
    if args.compare_segmentations:
        try:
            compare_segmentations([float(f) for f in args.compare_segmentations.split(",") if f.strip()])
        except real_data.RealDataMissing as exc:
            print(exc)
        return
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
