"""Helpers for the online-loop tests (no tests here): a small window-0 model and reference features.

Until the bundled default model exists, the tests train their own window-0
random forest on ``triage.synthetic.generate("small")`` through the training
API (:func:`training.pipeline.train`). The feature matrix is built here from
the catalogue functions directly (:mod:`features.windows` bounds,
:mod:`features.fast` characteristics), which is also the non-incremental
computation the loop's features are checked against.

The online loop asks the model about *every* commit, while triaged
candidates are already suspicious commits: a model trained on candidates only
calls about one ordinary noisy commit in six a change point (measured on
``step_series``). So the test model also learns from a few ordinary commits
per series (no candidate there), labelled ``false_positive``.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from features import catalogue as C
from features.fast import window_characteristics
from features.windows import window_bounds
from triage import labels as L

COLUMNS = C.feature_columns()


def reference_features(pre: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Every feature column of (Pre, After) computed from scratch, shape (len(COLUMNS),)."""
    pre = np.asarray(pre, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    return np.concatenate([window_characteristics(pre), window_characteristics(after), C.normalised_moments(pre, after)])


def window0_matrix(dataset, ordinary_per_series: int = 0, seed: int = 0) -> pd.DataFrame:
    """The window-0 feature matrix of every candidate (Pre bounded by the confirmed change points),
    plus ``ordinary_per_series`` random non-candidate commits per series labelled ``false_positive``."""
    rows = []
    rng = np.random.default_rng(seed)
    for h in dataset:
        confirmed = h.confirmed()
        candidates = h.candidates()
        others = np.setdiff1d(np.arange(1, len(h)), candidates)
        extra = rng.choice(others, min(ordinary_per_series, others.size), replace=False)
        for p in np.concatenate([candidates, extra]).astype(int):
            (a, b), (c, d) = window_bounds(int(p), len(h), confirmed, 0)
            feats = reference_features(h.values[a:b], h.values[c:d])
            rows.append(
                {
                    "series_id": h.series_id,
                    "commit": h.commits[p],
                    "index": int(p),
                    "timestamp": h.timestamps[p] if h.timestamps is not None else pd.NaT,
                    "label": h.labels[p] if h.labels[p] != L.NONE else L.FALSE_POSITIVE,
                    "truth_label": h.truth_label[p] if h.truth_label is not None else L.NONE,
                    **dict(zip(COLUMNS, feats, strict=True)),
                }
            )
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=None)
def small_matrix() -> pd.DataFrame:
    from triage.synthetic import generate

    return window0_matrix(generate("small", seed=0), ordinary_per_series=5)


@functools.lru_cache(maxsize=None)
def model_dir(kind: str = "rf", features: tuple[str, ...] | None = None) -> Path:
    """A window-0 model trained on the small synthetic preset, saved once per session."""
    from training.pipeline import train

    out = Path(tempfile.mkdtemp(prefix=f"online-{kind}-")) / "model"
    params = {"n_estimators": 60} if kind in ("rf", "xgb") else {}
    train(
        small_matrix(),
        out,
        model=kind,
        features=list(features) if features else None,
        window=0,
        test_size=0,
        track=False,
        model_params=params,
    )
    return out


def step_series(n: int = 120, at: tuple[int, ...] = (60,), jump: float = 0.3, seed: int = 0) -> np.ndarray:
    """A noisy flat series (level 100, 1 % noise) with clear level steps of ``jump`` (relative) at ``at``."""
    rng = np.random.default_rng(seed)
    level = np.full(n, 100.0)
    for k, a in enumerate(at):
        level[a:] *= 1 + jump * (1 if k % 2 == 0 else -1)
    return level * (1 + 0.01 * rng.standard_normal(n))
