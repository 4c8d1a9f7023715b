"""Test helper (no tests here): a small generated feature matrix for the training tests.

The realistic path is ``triage.synthetic`` -> ``features.extract``; this module
builds a contract-shaped matrix directly, in milliseconds, so that training
code can be exercised without either. With ``signal=True`` a true alert's
After window is shifted against its Pre window by a few standard deviations
(a learnable step, partly hidden by noise); with ``signal=False`` the labels
are independent of every feature (any model's AUC should be near 0.5).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.versions import file_sha256
from triage.training.model_files import CHECKSUMS

CHARACTERISTICS: tuple[str, ...] = ("mean", "sd", "median", "min", "max", "trend", "acf1")


def make_matrix(
    n_series: int = 200,
    candidates_per_series: int = 3,
    *,
    positive_rate: float = 0.35,
    untriaged_rate: float = 0.1,
    signal: bool = True,
    timestamps: bool = True,
    seed: int = 0,
) -> pd.DataFrame:
    """A feature matrix with ``n_series * candidates_per_series`` rows.

    Columns follow the contract (ARCHITECTURE.md): metadata, ``pre_<c>`` and
    ``after_<c>`` for each of :data:`CHARACTERISTICS`, and the four ``norm_*``
    columns. ``untriaged_rate`` of the rows are ``not_triaged`` (their
    ``truth_label`` keeps the hidden answer). Timestamps are hourly, increasing
    with the candidate position; ``timestamps=False`` leaves them NaT.
    """
    rng = np.random.default_rng(seed)
    n = n_series * candidates_per_series
    series = np.repeat([f"s{i:04d}" for i in range(n_series)], candidates_per_series)
    index = np.sort(rng.integers(20, 400, size=(n_series, candidates_per_series)), axis=1).ravel()
    truth = rng.random(n) < positive_rate
    level = rng.lognormal(3.0, 1.0, size=n)
    noise = rng.lognormal(-3.0, 0.5, size=n) * level
    # A true alert shifts the mean by 0.6-3 noise sds, a false one by 0-1.2: overlap on purpose.
    shift = np.where(truth, rng.uniform(0.6, 3.0, n), rng.uniform(0.0, 1.2, n)) if signal else rng.uniform(0.0, 2.0, n)
    shift *= rng.choice([-1.0, 1.0], n) * noise
    pre_mean, after_mean = level, level + shift
    after_sd = noise * rng.lognormal(0.0, 0.3, n)
    cols: dict[str, np.ndarray] = {}
    for side, mean, sd in (("pre", pre_mean, noise), ("after", after_mean, after_sd)):
        cols[f"{side}_mean"] = mean
        cols[f"{side}_sd"] = sd
        cols[f"{side}_median"] = mean + rng.normal(0, 0.1, n) * sd
        cols[f"{side}_min"] = mean - rng.uniform(1.5, 3.0, n) * sd
        cols[f"{side}_max"] = mean + rng.uniform(1.5, 3.0, n) * sd
        cols[f"{side}_trend"] = rng.normal(0, 0.05, n) * sd
        cols[f"{side}_acf1"] = rng.uniform(-0.3, 0.5, n)
    lo = np.minimum(cols["pre_min"], cols["after_min"])
    span = np.maximum(cols["pre_max"], cols["after_max"]) - lo
    cols["norm_mean_pre"] = (pre_mean - lo) / span
    cols["norm_mean_after"] = (after_mean - lo) / span
    cols["norm_sd_pre"] = noise / span
    cols["norm_sd_after"] = after_sd / span
    label = np.where(truth, labels.TRUE_POSITIVE, labels.FALSE_POSITIVE).astype(object)
    untriaged = rng.random(n) < untriaged_rate
    label[untriaged] = labels.NOT_TRIAGED
    ts = (
        pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(index, unit="h")
        if timestamps
        else pd.Series(pd.NaT, index=range(n), dtype="datetime64[ns, UTC]")
    )
    meta = pd.DataFrame(
        {
            "series_id": series,
            "commit": [f"c{i:05d}" for i in range(n)],
            "index": index.astype(np.int64),
            "timestamp": ts,
            "label": label,
            "truth_label": np.where(truth, labels.TRUE_POSITIVE, labels.FALSE_POSITIVE).astype(object),
        }
    )
    return pd.concat([meta, pd.DataFrame(cols)], axis=1)


def rewrite_manifest(path: Path, change) -> None:
    """Edit a model directory's manifest and recompute its checksum, as another version would have written it."""
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))
    lines = []
    for line in (path / CHECKSUMS).read_text().splitlines():
        digest, _, name = line.partition("  ")
        if name == "manifest.json":
            digest = file_sha256(path / name)
        lines.append(f"{digest}  {name}")
    (path / CHECKSUMS).write_text("\n".join(lines) + "\n")
