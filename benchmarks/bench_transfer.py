"""Does a model trained on synthetic histories recognise real triage decisions?

Trains a random forest (all characteristics, adaptive windows) on a synthetic
preset, then scores the candidates of the real MongoDB demo history
(../shared/data/mongodb_demo.csv: 2 true and 2 false alerts triaged by
MongoDB's engineers, 2 untriaged). ``--wander`` turns on the generator's
wandering-level noise for the training data, to see how much that realism
changes the transfer.

Run: .venv/bin/python benchmarks/bench_transfer.py [--series 1500] [--wander 0.5] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from sklearn.metrics import roc_auc_score

from triage.core import labels as L
from triage.features.extract import extract_features
from triage.loaders import load
from triage.synthetic import PRESETS, generate
from triage.training.classifier import TriageClassifier

MONGODB = Path(__file__).resolve().parents[2] / "shared" / "data" / "mongodb_demo.csv"
TRIAGED = [L.TRUE_POSITIVE, L.FALSE_POSITIVE]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--series", type=int, default=1500)
    parser.add_argument("--wander", type=float, default=0.0, help="share of series with a wandering level")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not MONGODB.exists():
        sys.exit(f"skipped: {MONGODB} is absent (../shared beside the checkout)")

    config = replace(PRESETS[args.preset], n_series=args.series, wander_share=args.wander)
    train = extract_features(generate(config, seed=args.seed), window="adaptive", n_jobs=2)
    train = train[train["label"].isin(TRIAGED)]
    columns = [c for c in train.columns if c.startswith(("pre_", "after_", "norm_"))]
    clf = TriageClassifier(model="rf", features=columns).fit(train, train["label"] == L.TRUE_POSITIVE)

    held = extract_features(generate(replace(config, n_series=500), seed=args.seed + 1), window="adaptive", n_jobs=2)
    held = held[held["label"].isin(TRIAGED)]
    auc = roc_auc_score(held["label"] == L.TRUE_POSITIVE, clf.predict_proba(held)[:, 1])

    real = extract_features(load(MONGODB), window="adaptive")
    p_true = clf.predict_proba(real)[:, 1]
    print(f"training: preset {args.preset!r}, {args.series} series, wander share {args.wander}, seed {args.seed}; "
          f"{len(train)} triaged candidates; synthetic held-out AUC {auc:.3f} ({len(held)} candidates)")
    print("MongoDB demo candidate | human label | P(true)")
    for index, label, p in zip(real["index"], real["label"], p_true, strict=True):
        print(f"{int(index):>22} | {label:<19} | {p:.3f}")


if __name__ == "__main__":
    main()
