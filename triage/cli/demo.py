"""The demo job behind ``triage demo`` / ``make demo``: every use of the tool, once.

1. generate synthetic histories (preset ``small``) and load them back;
2. load the bundled models (``models/``) and show their held-out figures;
3. batch-label the untriaged alerts and check them against the ground truth;
4. run Mozilla's Perfherder detector, score its candidates with the model
   `triage score` uses by default (`default-scoring`: candidate-bounded
   windows, the detector's own threshold), and compare precision / recall
   before and after triage;
5. run the online loop (the bundled online model, `online-w4`: commit p decided once 4 more have arrived) over the histories, commit by commit;
6. write the HTML report a sheriff would open.

The synthetic data is generated with a seed the bundled models were not
trained on, so the figures printed are out-of-sample.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from triage.cli.tables import dataset_summary
from triage.core import labels
from triage.core.history import Dataset
from triage.loaders import load
from triage.model_lookup import DEFAULTS, bundled_models_dir

#: Where the bundled models live: package data of ``triage`` (``models/`` in a
#: checkout, ``site-packages/triage/models`` once installed); see triage.model_lookup.
MODELS_DIR = bundled_models_dir()
ADAPTIVE_MODEL = DEFAULTS["alerts"]
SCORING_MODEL = DEFAULTS["scoring"]
ONLINE_MODEL = DEFAULTS["online"]
#: Not a seed the bundled models were trained on (they use seed 0).
DEMO_SEED = 2026


def bundled_model_dir(name: str, models_dir: Path = MODELS_DIR) -> Path:
    path = models_dir / name
    if not (path / "manifest.json").is_file():
        from triage.core.errors import InputError

        raise InputError(
            path, None, f"bundled model {name!r} is missing; rebuild it with `triage train --preset default` (see models/README.md)"
        )
    return path


def _figure(value: object) -> str:
    """A manifest metric to 3 decimals; "-" when the model records none (a scoring model's are per detector)."""
    return "-" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]


def _cpd_scores(dataset: Dataset, found: dict[str, list[int]]) -> tuple[float, float, float]:
    """Mean TCPDBench F1, precision, recall (margin 5) against the ground truth."""
    from triage.core.metrics import f_measure

    scores = [f_measure({1: h.true_change_points().tolist()}, found.get(h.series_id, []), margin=5) for h in dataset]
    f1, precision, recall = (float(np.mean([getattr(s, k) for s in scores])) for k in ("f", "precision", "recall"))
    return f1, precision, recall


def run_demo(out: Path, *, seed: int = DEMO_SEED, models_dir: Path = MODELS_DIR, console: Console | None = None) -> Path:
    """Run the whole demo into ``out``; returns the report's ``index.html``."""
    from triage.batch_label import agreement, label_candidates
    from triage.candidate_files import read_candidates
    from triage.cli.detectors import candidates_frame
    from triage.core.atomic import write_csv_atomic
    from triage.features.extract import extract_features  # noqa: F401  (fail early if features are broken)
    from triage.inference import candidate_windowing, detector_threshold, load_classifier
    from triage.online.loop import OnlineTriage
    from triage.plotting import plot_history
    from triage.report import build_report, candidate_points, read_decisions
    from triage.scoring import score_candidates
    from triage.synthetic import write_synthetic

    console = console or Console()
    out = Path(out)
    from triage.core.errors import InputError

    # Checked before the first step writes anything: found at step 6, a file
    # where a folder goes would cost the whole run.
    for folder in (out, out / "data", out / "report", out / "report" / "plots"):
        if folder.exists() and not folder.is_dir():
            raise InputError(folder, None, "exists and is not a directory: the demo writes a folder there")

    console.rule("1. synthetic performance histories")
    path = write_synthetic(out / "data", "small", seed)
    dataset = load(path)
    console.print(dataset_summary(dataset, title=f"preset 'small', seed {seed}: {path}"))
    history = max(dataset, key=lambda h: len(h.candidates()))
    console.print(f"plot of {history.series_id}: {plot_history(history, out / 'series.png')}")

    console.rule("2. the bundled models")
    adaptive_dir = bundled_model_dir(ADAPTIVE_MODEL, models_dir)
    model = load_classifier(adaptive_dir)
    table = Table(title=f"held-out figures from the model manifests ({models_dir.name}/)")
    for col in ("model", "window", "rows", "AUC", "accuracy", "threshold"):
        table.add_column(col, no_wrap=col != "threshold")
    online_dir = bundled_model_dir(ONLINE_MODEL, models_dir)
    scoring_dir = bundled_model_dir(SCORING_MODEL, models_dir)
    for model_dir in (adaptive_dir, scoring_dir, online_dir):
        clf = load_classifier(model_dir)
        m = clf.manifest_
        metrics = m.get("metrics", {})
        own = detector_threshold(clf, "perfherder")
        stream = ((m.get("extra") or {}).get("online") or {}).get("threshold")
        # A scoring model's threshold is per detector; its policy sentence would squeeze the table.
        # An online model's loop alarms at its stream rule's threshold (0.98), not the fit's (0.68).
        cut = (f"per detector, perfherder {own:.2f}" if own is not None
               else f"{stream:.2f} (the loop's, chosen on real data)" if stream is not None
               else f"{m['threshold']['value']:.2f} ({_policy_words(m['threshold']['policy'])})")
        n_train = m["n_train"]
        table.add_row(
            model_dir.name,
            "candidates" if candidate_windowing(clf) else str(m.get("window")),
            # every row it was trained on, as its model card counts them (online-w4's fit part alone read 58,259)
            f"{n_train.get('positives', 0) + n_train.get('negatives', 0) or n_train['fit']:,}",
            _figure(metrics.get("auc")),
            _figure(metrics.get("accuracy")),
            cut,
        )
    console.print(table)
    # These are the manifests' held-out figures, on the data each model was trained on;
    # the figures that carry over are the real-data ones of the model cards.
    console.print(
        "(held out from each model's own training data; the real-data figures, on projects the models never "
        f"saw: {models_dir.name}/README.md and BENCHMARKS.md)"
    )

    console.rule("3. batch labelling of untriaged alerts")
    decisions = label_candidates(dataset, model, which="untriaged")
    agree = agreement(decisions, reference="truth_label")
    console.print(
        f"{len(decisions)} untriaged alerts labelled; {int((decisions['classification'] == labels.TRUE_POSITIVE).sum())} "
        f"called true; agreement with the ground truth: {agree.get('accuracy', float('nan')):.2f}"
    )
    write_csv_atomic(decisions.drop(columns=["index", "truth_label"]), out / "labelled.csv")

    console.rule("4. scoring Perfherder's candidates")
    cands = candidates_frame(dataset, "perfherder")
    cand_file = write_csv_atomic(cands, out / "candidates.csv")
    # Fresh candidates have no confirmed neighbours: the scoring model, as `triage score` uses it on a
    # history without triage labels (with them, an alert a commit after a labelled change has an empty
    # Pre window and is not scorable: it is that change again).
    scored = score_candidates(unlabelled(dataset), read_candidates(cand_file), load_classifier(scoring_dir))
    scored_file = write_csv_atomic(scored, out / "scored.csv")
    console.print(
        f"{len(cands)} candidates from perfherder, {int((scored['classification'] == labels.TRUE_POSITIVE).sum())} "
        f"kept by the model: {scored_file}"
    )
    alone: dict[str, list[int]] = {}
    kept: dict[str, list[int]] = {}
    called_true = scored["classification"] == labels.TRUE_POSITIVE
    for sid, idx, keep in zip(cands["series_id"], cands["index"], called_true, strict=True):
        alone.setdefault(sid, []).append(int(idx))
        if bool(keep):
            kept.setdefault(sid, []).append(int(idx))
    t = Table("candidates", "count", "F1", "precision", "recall", title="against the ground truth (TCPDBench, margin 5)")
    for name, found in (("perfherder alone", alone), ("perfherder + triage", kept)):
        f1, p, r = _cpd_scores(dataset, found)
        t.add_row(name, str(sum(map(len, found.values()))), f"{f1:.3f}", f"{p:.3f}", f"{r:.3f}")

    console.rule("5. the online loop, commit by commit")
    loop = OnlineTriage.from_model_dir(online_dir, explain="positive")
    detected = loop.replay(dataset)
    online: dict[str, list[int]] = {}
    for d in detected:
        online.setdefault(d.series, []).append(int(d.index))
    f1, p, r = _cpd_scores(dataset, online)
    t.add_row(f"online loop (K = {loop.confirm_after})", str(len(detected)), f"{f1:.3f}", f"{p:.3f}", f"{r:.3f}")
    console.print(t)
    if detected:
        first = detected[0]
        console.print(f"e.g. {first.series} commit {first.commit}: P(true) {first.probability:.2f} - {'; '.join(first.top_features)}")

    console.rule("6. the report")
    index = build_report(
        dataset, read_decisions(scored_file, dataset), out / "report",
        candidates=candidate_points(cand_file, dataset), title="changepoint-triage demo",
    )
    console.print(f"report: {index}")
    console.print(f"triage workspace on this data: triage serve --data {path} --candidates {cand_file} --model {adaptive_dir} --labels {out / 'labels.sqlite'}", markup=False, highlight=False, soft_wrap=True)
    return index


def _policy_words(spec: str) -> str:
    """A manifest's threshold policy as a reader says it: ``fbeta:1`` -> ``best F1 on validation``."""
    from triage.training.thresholds import Fixed, MaxFBeta, TargetRecall, parse_policy

    try:
        policy = parse_policy(spec)
    except ValueError:
        return spec  # a policy of some later version: its own spelling is all there is
    if isinstance(policy, Fixed):
        return "fixed"
    if isinstance(policy, TargetRecall):
        return f"recall >= {policy.recall:g} on validation"
    assert isinstance(policy, MaxFBeta)
    return f"best F{policy.beta:g} on validation"


def unlabelled(dataset: Dataset) -> Dataset:
    """``dataset`` without its triage labels: fresh candidates are scored on a history nobody triaged yet."""
    from dataclasses import replace

    return Dataset((replace(h, labels=np.full(len(h), labels.NONE, dtype=object)) for h in dataset),
                   source=dataset.source)
