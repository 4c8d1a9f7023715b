"""What makes synthetic triage hard, and what one more feature would buy.

For the default preset and variants with one source of false alerts or
difficulty removed, trains a random forest on all catalogue columns (adaptive
windows, 1,500 series, seed 1) and reports its AUC on 600 fresh series
(seed 2); then the same with one experimental extra column, ``|shift_robust|``
= |median(After) - median(Pre)| / (1.4826 * MAD(Pre)), a level shift that one
spike cannot distort (the paper's min-max normalised means can be).

Run: .venv/bin/python benchmarks/bench_ablation.py [--train 1500] [--test 600]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
from sklearn.metrics import roc_auc_score

from triage.core import labels as L
from triage.features.extract import extract_features
from triage.features.windows import window_bounds
from triage.synthetic import PRESETS, generate
from triage.training.classifier import TriageClassifier

TRIAGED = [L.TRUE_POSITIVE, L.FALSE_POSITIVE]


def shift_robust(dataset, matrix) -> np.ndarray:
    """|median(After) - median(Pre)| in robust Pre sd units, per matrix row (experimental)."""
    out = np.zeros(len(matrix))
    for row, (sid, p) in enumerate(zip(matrix["series_id"], matrix["index"], strict=True)):
        h = dataset[sid]
        (a, b), (c, d) = window_bounds(int(p), len(h), h.confirmed(), "adaptive")
        pre, after = h.values[a:b], h.values[c:d]
        if len(pre) < 2 or len(after) < 1:
            continue
        mad = 1.4826 * np.median(np.abs(pre - np.median(pre)))
        if mad > 0:
            out[row] = abs(np.median(after) - np.median(pre)) / mad
    return out


def auc_pair(config, n_train: int, n_test: int) -> tuple[float, float, int]:
    train_ds, test_ds = generate(replace(config, n_series=n_train), seed=1), generate(replace(config, n_series=n_test), seed=2)
    train = extract_features(train_ds, window="adaptive", n_jobs=2)
    test = extract_features(test_ds, window="adaptive", n_jobs=2)
    train, test = train[train["label"].isin(TRIAGED)].copy(), test[test["label"].isin(TRIAGED)].copy()
    columns = [c for c in train.columns if c.startswith(("pre_", "after_", "norm_"))]
    aucs = []
    for extra in (False, True):
        cols = list(columns)
        if extra:
            train["shift_robust"], test["shift_robust"] = shift_robust(train_ds, train), shift_robust(test_ds, test)
            cols.append("shift_robust")
        clf = TriageClassifier(model="rf", features=cols).fit(train, train["label"] == L.TRUE_POSITIVE)
        aucs.append(roc_auc_score(test["label"] == L.TRUE_POSITIVE, clf.predict_proba(test)[:, 1]))
    return aucs[0], aucs[1], len(test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--test", type=int, default=600)
    args = parser.parse_args()
    base = PRESETS["default"]
    variants = {
        "default": base,
        "no spikes": replace(base, spike_rate=0.0),
        "no bimodal noise": replace(base, noise_weights=(0.7, 0.3, 0.0)),
        "no drifts": replace(base, drift_share=0.0),
        "no short-lived regressions": replace(base, short_regression_share=0.0),
        "candidates at the exact commit": replace(base, exact_detection_share=1.0),
    }
    print("| variant of preset `default` | AUC, catalogue columns | AUC, + shift_robust | test candidates |")
    print("| --- | ---: | ---: | ---: |")
    for name, config in variants.items():
        a, b, n = auc_pair(config, args.train, args.test)
        print(f"| {name} | {a:.3f} | {b:.3f} | {n} |", flush=True)


if __name__ == "__main__":
    main()
