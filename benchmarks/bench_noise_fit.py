"""Real vs ``realnoise`` synthetic histories, side by side per source project.

Run: nice .venv/bin/python benchmarks/bench_noise_fit.py [--series 1500] [--seed 0] [--out benchmarks/out/noise_fit.md]

Every statistic is measured per series with the same code on both sides (the
real series: one value per commit, re-runs averaged at their first position,
as ``fit_noise.py`` reads them; the synthetic series: ``generate("realnoise")``
with replicates averaged likewise) and shown as the median and the
interquartile range over the series of one source, with the two-sample
Kolmogorov-Smirnov distance D between the per-series distributions.

*Fitted* statistics are the ones ``fit_noise.py`` turns into the profile;
*not fitted* ones are measured here only:

- ``perfherder`` alarms per 100 commits (``triage.detectors.make("perfherder")``);
- ``edivisive`` alarms per 100 commits (Otava's E-Divisive);
- robust CV of the raw relative values (1.4826 MAD / median, no segmentation);
- lag-1 autocorrelation of first differences (white noise: -0.5; a wandering
  level or bursts move it up);
- share of commits further than 3 robust sd from the rolling median of 21;
- spread of the noise level: ratio of the 90% to the 10% quantile of the
  robust sd in windows of 30 commits.

Skips with a message when ``../shared`` is absent.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_noise import DEFAULT_DATA, read_real, source_of  # noqa: E402

from triage.core.atomic import write_text_atomic  # noqa: E402
from triage.core.noise import diff_noise, robust_sd  # noqa: E402
from triage.detectors import make  # noqa: E402
from triage.noise_profiles import series_noise_stats  # noqa: E402
from triage.synthetic import PRESETS, generate  # noqa: E402

FITTED = {
    "robust CV of residuals": lambda s: np.exp(s["log_cv"]),
    "wandering-level share": lambda s: s["wander_share"],
    "tail: (q95-q5)/(q75-q25)": lambda s: s["tail_ratio"],
    "outliers (>6 sd) %": lambda s: 100 * s["outlier_rate"],
    "bimodal share %": lambda s: 100 * s["bimodal_share"],
    "level shifts / 100 commits": lambda s: 100 * s["shift_rate"],
    "noise-level changes / 100 commits": lambda s: 100 * s["noise_changes"] / s["n"],
    "noise-level volatility": lambda s: s["volatility"],
}


def unfitted_stats(values: np.ndarray, detectors: dict) -> dict[str, float]:
    x = np.asarray(values, dtype=float)
    n = len(x)
    y = x / np.median(x)
    d = np.diff(y)
    sd = max(robust_sd(y), 1e-12)
    roll = pd.Series(y).rolling(21, center=True, min_periods=1).median().to_numpy()
    dsd = max(diff_noise(y), 1e-12)
    local = pd.Series(y).rolling(30).apply(robust_sd, raw=True).dropna().to_numpy()
    local = local[local > 0]
    out = {f"{name} alarms / 100 commits": 100 * len(det.detect(x)) / n for name, det in detectors.items()}
    out.update({
        "raw robust CV": sd,
        "lag-1 autocorrelation of differences": float(np.corrcoef(d[:-1], d[1:])[0, 1]) if d.std() > 0 else 0.0,
        "beyond 3 sd of rolling median %": 100 * float(np.mean(np.abs(y - roll) > 3 * dsd)),
        "noise-level spread q90/q10": float(np.quantile(local, 0.9) / np.quantile(local, 0.1)) if len(local) > 10 else 1.0,
    })
    return out


def measure(series: dict[str, np.ndarray], detectors: dict) -> pd.DataFrame:
    rows = []
    for sid, values in series.items():
        s = series_noise_stats(values)
        row = {"source": source_of(sid), "commits": len(values), **{k: f(s) for k, f in FITTED.items()}}
        row.update(unfitted_stats(values, detectors))
        rows.append(row)
    return pd.DataFrame(rows)


def synthetic_series(n_series: int, seed: int) -> dict[str, np.ndarray]:
    dataset = generate(replace(PRESETS["realnoise"], n_series=n_series), seed)
    # The series name starts with its source: "django-asv.query.t00012".
    return {h.series_id.split(".", 1)[0] + "/" + h.series_id: h.values for h in dataset}


def _summary(v: pd.Series) -> str:
    v = v.dropna()
    if v.empty:
        return "-"
    q = np.quantile(v, [0.25, 0.5, 0.75])
    fmt = "{:.3g}"
    return f"{fmt.format(q[1])} ({fmt.format(q[0])}-{fmt.format(q[2])})"


def table(real: pd.DataFrame, synth: pd.DataFrame) -> str:
    stats_cols = [c for c in real.columns if c not in ("source", "commits")]
    lines = [
        "| source | statistic | fitted | real: median (IQR) | synthetic: median (IQR) | KS D |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    for src in sorted(real["source"].unique()):
        r, s = real[real["source"] == src], synth[synth["source"] == src]
        head = f"{src} ({len(r)} real, {len(s)} synthetic)"
        for col in stats_cols:
            a, b = r[col].dropna(), s[col].dropna()
            ks = stats.ks_2samp(a, b).statistic if len(a) and len(b) else float("nan")
            lines.append(f"| {head} | {col} | {'yes' if col in FITTED else 'no'} | {_summary(a)} | {_summary(b)} | {ks:.2f} |")
            head = ""
    # Pooled over every series: total alarms / total commits (the issue's
    # "alarms per 100 commits" on the untouched real histories).
    lines += ["", "| alarms per 100 commits, all series pooled | real | synthetic |", "| --- | ---: | ---: |"]
    for col in (c for c in stats_cols if c.endswith("alarms / 100 commits")):
        pooled = [float((f[col] * f["commits"]).sum() / f["commits"].sum()) for f in (real, synth)]
        lines.append(f"| {col.split()[0]} | {pooled[0]:.2f} | {pooled[1]:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--series", type=int, default=1500, help="synthetic series to generate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "noise_fit.md")
    args = parser.parse_args()
    if not (args.data / "histories.csv.gz").is_file():
        print(f"skipped: {args.data / 'histories.csv.gz'} is absent (the real histories live in ../shared/data/real/)")
        return 0
    t0 = time.perf_counter()
    detectors = {"perfherder": make("perfherder"), "edivisive": make("edivisive")}
    real = measure(read_real(args.data), detectors)
    synth = measure(synthetic_series(args.series, args.seed), detectors)
    text = (
        f"Real: {len(real)} series of ../shared/data/real; synthetic: preset realnoise, "
        f"{len(synth)} series, seed {args.seed}. Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; {time.perf_counter() - t0:.0f} s.\n\n" + table(real, synth)
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(text, args.out)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
