"""Helpers for the online-loop tests (no tests here): a small window-0 model and reference features.

Until the bundled default model exists, the tests train their own window-0
random forest on ``triage.synthetic.generate("small")`` through the training
API (:func:`training.pipeline.train`). The feature matrix is built here from
the catalogue functions directly (:mod:`features.windows` bounds,
:mod:`features.fast` characteristics), which is also the non-incremental
computation the loop's features are checked against.

The online loop asks the model about *every* commit, while triaged
candidates are already suspicious commits: a model trained on candidates only
called about one ordinary noisy commit in six a change point (measured on
``step_series``). So the test model learns the per-commit question: the
ground-truth change points of the synthetic series are the positives (Pre
bounded by them), the false-alert candidates and ten ordinary commits per
series the negatives.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels as L
from triage.features import catalogue as C
from triage.features.fast import window_characteristics
from triage.features.windows import window_bounds

COLUMNS = C.feature_columns()


def reference_features(pre: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Every feature column of (Pre, After) computed from scratch, shape (len(COLUMNS),)."""
    pre = np.asarray(pre, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    return np.concatenate(
        [
            window_characteristics(pre),
            window_characteristics(after),
            C.normalised_moments(pre, after),
        ]
    )


def window0_matrix(dataset, ordinary_per_series: int = 10, seed: int = 0) -> pd.DataFrame:
    """Window-0 feature rows for the per-commit question (see the module docstring).

    Positives: every ground-truth change point; negatives: every
    ``false_positive`` candidate and ``ordinary_per_series`` random other
    commits per series. Pre is bounded by the ground-truth change points.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for h in dataset:
        truth = h.true_change_points()
        false_alerts = np.flatnonzero(h.labels == L.FALSE_POSITIVE)
        others = np.setdiff1d(np.arange(1, len(h)), np.concatenate([truth, h.candidates()]))
        ordinary = rng.choice(others, min(ordinary_per_series, others.size), replace=False)
        picks = [(int(p), L.TRUE_POSITIVE) for p in truth]
        picks += [(int(p), L.FALSE_POSITIVE) for p in np.concatenate([false_alerts, ordinary])]
        for p, label in picks:
            (a, b), (c, d) = window_bounds(p, len(h), truth, 0)
            feats = reference_features(h.values[a:b], h.values[c:d])
            rows.append(
                {
                    "series_id": h.series_id,
                    "commit": h.commits[p],
                    "index": p,
                    "timestamp": h.timestamps[p] if h.timestamps is not None else pd.NaT,
                    "label": label,
                    "truth_label": label,
                    **dict(zip(COLUMNS, feats, strict=True)),
                }
            )
    return pd.DataFrame(rows)


@functools.cache
def small_matrix() -> pd.DataFrame:
    from triage.synthetic import generate

    return window0_matrix(generate("small", seed=0))


@functools.cache
def model_dir(kind: str = "rf", features: tuple[str, ...] | None = None) -> Path:
    """A window-0 model trained on the small synthetic preset, saved once per session."""
    from triage.training.pipeline import train

    root = Path(tempfile.mkdtemp(prefix=f"online-{kind}-"))
    atexit.register(shutil.rmtree, root, True)
    out = root / "model"
    params = {"n_estimators": 100} if kind in ("rf", "xgb") else {}
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


def step_series(
    n: int = 120, at: tuple[int, ...] = (60,), jump: float = 0.3, seed: int = 0
) -> np.ndarray:
    """A noisy flat series (level 100, 1 % noise) with clear level steps of ``jump`` (relative) at ``at``."""
    rng = np.random.default_rng(seed)
    level = np.full(n, 100.0)
    for k, a in enumerate(at):
        level[a:] *= 1 + jump * (1 if k % 2 == 0 else -1)
    return level * (1 + 0.01 * rng.standard_normal(n))
