"""The evaluation protocol of Bauer et al. (ICPE 2022), and two stricter splits.

Paper protocol (``split="random"``): 100 random splits of the triaged
candidates, 80 % train / 20 % test (stratified by class), and 10 % of the train
part held out as validation. Each model is fitted on the remaining 72 %; the
validation part serves calibration (SVM) and a learned threshold policy; the
test part gives AUC, accuracy, sensitivity (recall of true alerts) and
specificity (recall of false alerts). Table 1 reports each metric's mean over
the splits and its 95 % interval.

The 95 % interval here is the 2.5th-97.5th percentile of the per-split values:
the range one split's estimate falls in. (Repeated random splits overlap, so a
t-interval of the mean would claim more certainty than the data hold.)

Two stricter splits, side by side with the paper's:

``grouped``
    Test candidates come from series never seen in training (20 % of the
    series, :class:`~sklearn.model_selection.GroupShuffleSplit`; validation
    likewise grouped). Random splits let neighbouring candidates of one history
    sit on both sides, which flatters the score. A series is its
    ``series_id``: one history under two ids (a copy, a re-run loaded as
    another series) is two groups, and its candidates' identical feature rows
    land on both sides; each record's ``test_twins`` counts the test rows
    of a series that half its rows show to be a copy of another series of
    the train or validation part (:func:`cross_series_twins`).
``time``
    Train on earlier candidates, test on later ones: rows are sorted by
    timestamp when every row has one, else by ``index`` (the commit position;
    this assumes series advance together, see
    :func:`features.matrix.time_key`), ties by series id. The latest 20 % are
    the test part and the latest 10 % of the rest the validation part (at
    least 2 candidates each, the fewest that can hold both classes). The
    split is the same for every repetition; repetitions vary only the model's
    seed, so its interval shows model variance, not data variance. It is
    checked before any model is fitted: a part of one class ends the run at
    once, not after the other splits' repetitions.

:func:`window_study` repeats the protocol for each window size (paper Fig. 2)
given a function that builds the feature matrix for a window, e.g.
``lambda w: features.extract.extract_features(dataset, window=w)``.

Runs are parallel (joblib processes, one model thread each) with a rich
progress bar on stderr (``label`` names what it counts: the window-study's window).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.atomic import write_csv_atomic, write_text_atomic
from triage.core.metrics import classification_report
from triage.features.matrix import TrainingData, training_data
from triage.training.classifier import TriageClassifier
from triage.training.model_files import library_versions
from triage.training.model_kinds import MODELS

SPLITS: tuple[str, ...] = ("random", "grouped", "time")
METRICS: tuple[str, ...] = ("auc", "accuracy", "sensitivity", "specificity")
WINDOWS: tuple[int | str, ...] = (*range(11), "adaptive")


# ---------------------------------------------------------------------- splits


#: Seeds scikit-learn and numpy's legacy generators take: [0, 2**32).
SEED_RANGE = 2**32


def derived_seed(seed: int, offset: int) -> int:
    """``seed + offset`` wrapped into [0, :data:`SEED_RANGE`): the seed of a retry or a repetition.

    Below the range's end it is the plain sum, so every result of a smaller
    seed stays as it was; ``--seed 4294967295`` (the largest the CLI takes)
    gave repetition 1 the seed 4294967296, which scikit-learn refuses.
    """
    return (int(seed) + int(offset)) % SEED_RANGE


class SplitError(ValueError):
    """The labelled rows cannot be split so that every part holds both classes (too few of one)."""


def split_indices(
    kind: str,
    y: np.ndarray,
    groups: np.ndarray,
    order: np.ndarray,
    *,
    seed: int,
    test_size: float = 0.2,
    val_size: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, validation, test) row indices for one repetition.

    ``y`` (n,) 0/1 targets, ``groups`` (n,) series ids, ``order`` (n,) time
    key. ``val_size`` is a fraction of the train part. Random and grouped
    splits retry with a derived seed (up to 20 times) until each part holds
    both classes.
    """
    from sklearn.model_selection import GroupShuffleSplit, train_test_split

    idx = np.arange(len(y))
    if kind == "time":
        ranked = np.lexsort((groups, order))
        # Two at least: a part of one candidate can never hold both classes, and
        # the time split has no other draw; it failed on every history under 15 candidates.
        n_test = max(2, int(round(test_size * len(y))))
        rest, test = ranked[:-n_test], ranked[-n_test:]
        n_val = max(2, int(round(val_size * len(rest))))
        parts = np.sort(rest[:-n_val]), np.sort(rest[-n_val:]), np.sort(test)
        # The time split has no other draw to try: a part of one class (false alerts
        # labelled only early in the history) failed deep in the fit (Platt scaling
        # on one class) or gave an AUC of nothing.
        for name, part in zip(("train", "validation", "test"), parts, strict=True):
            if len(np.unique(y[part])) < 2:
                only = "true" if y[part].all() else "false"
                raise SplitError(f"time split: its {name} part ({len(part)} candidates in time order) holds "
                                 f"only {only} alerts; each part needs both: label candidates across the whole "
                                 "history, or leave the time split out (--split-kinds random,grouped)")
        return parts
    counts = {c: int((y == c).sum()) for c in (0, 1)}
    if kind == "random" and min(counts.values()) < 3:
        # A stratified split puts each class in three parts; scikit-learn's own refusal
        # ("the least populated class in y has only 1 member") names no label.
        raise SplitError(f"random split: {counts[1]} true and {counts[0]} false candidates; each part needs both, "
                         "so at least 3 of each")
    for attempt in range(20):
        # Held to scikit-learn's seed range: from --seed 4294967295 on, every retry raised
        # "random_state must be in [0, 4294967295]", read here as a failed draw (SplitError).
        s = derived_seed(seed, 100_003 * attempt)
        if kind not in ("random", "grouped"):
            raise ValueError(f"unknown split {kind!r} (use one of {', '.join(SPLITS)})")
        try:
            if kind == "random":
                rest, test = train_test_split(idx, test_size=test_size, stratify=y, random_state=s)
                train, val = train_test_split(rest, test_size=val_size, stratify=y[rest], random_state=s)
            else:
                rest, test = next(GroupShuffleSplit(1, test_size=test_size, random_state=s).split(idx, y, groups))
                tr, va = next(GroupShuffleSplit(1, test_size=val_size, random_state=s).split(
                    rest, y[rest], groups[rest]))
                train, val = rest[tr], rest[va]
        except ValueError:
            # What the test part leaves is too small to split again (train --test-size 0.95:
            # one series): scikit-learn's refusal escaped as an internal error. A failed
            # attempt, as one without both classes, ends in the SplitError below.
            continue
        if all(len(np.unique(y[part])) == 2 for part in (train, val, test)):
            return np.sort(train), np.sort(val), np.sort(test)
    groups_of = {c: len(np.unique(groups[y == c])) for c in (0, 1)}
    # three parts need three series: no --test-size short of 0 splits fewer
    lower = "or lower --test-size" if len(np.unique(groups)) >= 3 else "or --test-size 0, which skips the held-out figures"
    raise SplitError(
        f"{kind} split: could not put both classes in train, validation and test in 20 tries "
        f"({int((y == 1).sum())} positive rows in {groups_of[1]} series, {int((y == 0).sum())} negative rows in "
        f"{groups_of[0]} series); label more candidates or add series (train: {lower})"
    )


def cross_series_twins(X: np.ndarray, groups: np.ndarray, seen: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The rows of ``test`` whose series looks like a copy of another series of ``seen``.

    ``X`` (n, p) features, ``groups`` (n,) series ids, ``seen`` / ``test``
    row indices. Rows are compared bit for bit, NaN equal to NaN and -0.0 to
    0.0. Noisy measurements make two histories' windows equal only when one
    is a copy of the other, which a split by series id does not see. A held-out
    series counts as a copy of another when at least half of its held-out rows
    repeat rows of that one series; its rows that do are returned. Why not
    every repeated row: a window of one or two commits has a row of constants
    (every shape feature 0, ``hurst`` 0.5) that unrelated series share, and a
    window-0 training on 200 distinct synthetic histories was told it held
    "the same history under two series ids" (a walkthrough, thirtieth session).
    """
    rows = np.array(X, dtype=np.float64) + 0.0  # + 0.0: -0.0 becomes 0.0
    rows[np.isnan(rows)] = np.nan  # one NaN bit pattern
    keys = [r.tobytes() for r in rows]
    seen_in: dict[bytes, set[str]] = {}
    for i in np.asarray(seen, dtype=np.int64):
        seen_in.setdefault(keys[i], set()).add(str(groups[i]))
    test = np.asarray(test, dtype=np.int64)
    others = [seen_in.get(keys[i], set()) - {str(groups[i])} for i in test]
    by_series: dict[str, list[int]] = {}
    for k, i in enumerate(test):
        by_series.setdefault(str(groups[i]), []).append(k)
    hit = np.zeros(len(test), dtype=bool)
    for ks in by_series.values():
        counts = Counter(h for k in ks for h in others[k])
        copied = {h for h, c in counts.items() if 2 * c >= len(ks)}
        for k in ks:
            hit[k] = bool(others[k] & copied)
    return test[hit]


# ---------------------------------------------------------------------- one run


def _run_one(X, y, groups, order, model, kind, rep, seed, threshold, params, test_size, val_size):
    train, val, test = split_indices(kind, y, groups, order, seed=seed, test_size=test_size, val_size=val_size)
    clf = TriageClassifier(model=model, threshold=threshold, random_state=seed, n_jobs=1, **params)
    started, cpu_started = time.perf_counter(), time.process_time()
    clf.fit(X[train], y[train], groups=groups[train], validation=(X[val], y[val]))
    fit_seconds = time.perf_counter() - started
    proba = clf.predict_proba(X[test])[:, 1]
    # CPU seconds (one thread per model) do not grow with other work on the
    # machine, unlike wall time: they give the protocol's cost on idle cores.
    cpu_seconds = time.process_time() - cpu_started
    return {
        "model": model,
        "split": kind,
        "rep": rep,
        "seed": seed,
        **classification_report(y[test], proba, clf.threshold_),
        "threshold": float(clf.threshold_),
        "n_train": int(len(train)),
        "n_test": int(len(test)),
        "test_twins": int(len(cross_series_twins(X, groups, np.r_[train, val], test))),
        "fit_seconds": fit_seconds,
        "cpu_seconds": cpu_seconds,
    }


# ---------------------------------------------------------------------- results


@dataclass
class EvaluationResult:
    """Per-split records and the settings that produced them.

    ``records`` has one row per (model, split, rep): the four metrics,
    ``threshold``, ``n_train``, ``n_test``, ``test_twins`` (test rows repeated
    by a train or validation row of another series, :func:`cross_series_twins`),
    ``fit_seconds`` (wall) and ``cpu_seconds`` (fit + predict, CPU time of the worker).
    """

    records: pd.DataFrame
    settings: dict[str, object] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """One row per (split, model): ``<metric>_mean``, ``_sd``, ``_ci_low``, ``_ci_high``, n."""
        return summarise(self.records, ["split", "model"])

    def differences(self) -> pd.DataFrame:
        """Mean of each metric under ``grouped`` / ``time`` minus under ``random``, per model."""
        s = self.summary().set_index(["split", "model"])
        rows = []
        for kind in ("grouped", "time"):
            for model in s.index.get_level_values("model").unique():
                if (kind, model) not in s.index or ("random", model) not in s.index:
                    continue
                row = {"split": f"{kind} - random", "model": model}
                for m in METRICS:
                    row[m] = s.loc[(kind, model), f"{m}_mean"] - s.loc[("random", model), f"{m}_mean"]
                rows.append(row)
        # With its columns when empty (no random split to compare with): it was a 1-byte CSV.
        return pd.DataFrame(rows, columns=["split", "model", *METRICS])

    def table1(self) -> pd.DataFrame:
        """Table-1 style: ``mean [low, high]`` strings per metric, one row per (split, model)."""
        s = self.summary()
        out = s[["split", "model"]].copy()
        for m in METRICS:
            out[m] = [
                f"{r[f'{m}_mean']:.3f} [{r[f'{m}_ci_low']:.3f}, {r[f'{m}_ci_high']:.3f}]" for _, r in s.iterrows()
            ]
        out["fit s"] = s["fit_seconds_mean"].map(lambda v: f"{v:.2f}")
        if "cpu_seconds_mean" in s:
            out["cpu s"] = s["cpu_seconds_mean"].map(lambda v: f"{v:.2f}")
        return out

    def to_markdown(self) -> str:
        """Table 1 and the split differences as Markdown tables (the differences only with a random split)."""
        differences = self.differences()
        if differences.empty:  # an empty table was a header row with nothing under it, read as broken
            return _markdown(self.table1()) + "\n\n(No differences to the random split: it was not run.)"
        return _markdown(self.table1()) + "\n\n" + _markdown(differences.round(4))

    def save(self, out: str | Path) -> dict[str, Path]:
        """Write records.csv, summary.csv, differences.csv, summary.md and settings.json into ``out``.

        ``settings.json`` holds :attr:`settings` (models, splits, seed, sizes,
        threshold, features, the rows' ``data_hash``, model parameters) and the
        library versions: what the figures came from. Without it a results
        folder written with ``--no-track`` could not be told from another
        seed's or another data's, nor rerun.
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "records": out / "records.csv",
            "summary": out / "summary.csv",
            "differences": out / "differences.csv",
            "markdown": out / "summary.md",
            "settings": out / "settings.json",
        }
        # Each file whole or not at all: a kill mid-write left a cut CSV beside whole ones.
        write_csv_atomic(self.records, paths["records"])
        write_csv_atomic(self.summary(), paths["summary"])
        write_csv_atomic(self.differences(), paths["differences"])
        write_text_atomic(self.to_markdown() + "\n", paths["markdown"])
        settings = {**self.settings, "libraries": library_versions()}
        write_text_atomic(json.dumps(settings, indent=2, sort_keys=True, default=_json_default) + "\n",
                          paths["settings"])
        return paths


def _json_default(value: object) -> object:
    """numpy scalars and arrays (a parameter's value) as JSON; anything else as its text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def summarise(records: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Mean, sd and 2.5/97.5 percentiles of each metric (and times) per ``by`` group."""
    rows = []
    for key, g in records.groupby(list(by), sort=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row["n"] = len(g)
        for m in (*METRICS, "fit_seconds", "cpu_seconds"):
            if m not in g:
                continue
            v = g[m].to_numpy(dtype=float)
            row[f"{m}_mean"] = float(np.nanmean(v))
            row[f"{m}_sd"] = float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0
            row[f"{m}_ci_low"], row[f"{m}_ci_high"] = (float(q) for q in np.nanpercentile(v, [2.5, 97.5]))
        rows.append(row)
    return pd.DataFrame(rows)


def _markdown(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


# ---------------------------------------------------------------------- the protocol


def evaluate(
    data: pd.DataFrame | TrainingData,
    *,
    models: Sequence[str] = MODELS,
    splits: Sequence[str] = SPLITS,
    n_splits: int = 100,
    features=None,
    threshold: object = "0.5",
    test_size: float = 0.2,
    val_size: float = 0.1,
    random_state: int = 0,
    n_jobs: int = 1,
    progress: bool = True,
    model_params: dict[str, dict[str, object]] | None = None,
    label: str = "",
) -> EvaluationResult:
    """Run ``n_splits`` repetitions of each split kind for each model.

    ``data`` is a feature matrix (triaged rows are used) or prepared
    :class:`~features.matrix.TrainingData`. ``model_params`` maps a model name
    to keyword overrides (e.g. ``{"rf": {"n_estimators": 100}}``). Repetition
    ``r`` uses seed ``random_state + r`` (modulo 2**32, :func:`derived_seed`)
    for the split and the model, so every model sees the same splits.
    """
    if isinstance(features, str | Path) and not isinstance(data, TrainingData):
        # The feature set's problem, named after it (errors without a file are put on the data).
        from triage.features.feature_sets import check_columns, read_feature_set

        check_columns(features, read_feature_set(features), data.columns)
    td = data if isinstance(data, TrainingData) else training_data(data, features)
    for m in models:
        if m not in MODELS:
            raise ValueError(f"unknown model {m!r} (use {', '.join(MODELS)})")
    for s in splits:
        if s not in SPLITS:
            raise ValueError(f"unknown split {s!r} (use {', '.join(SPLITS)})")
    model_params = model_params or {}
    y = td.y.astype(np.int64)
    if "time" in splits:
        # One split for every repetition: a part of one class is known now, before
        # minutes of random and grouped repetitions whose results it would throw away.
        split_indices("time", y, td.groups, td.order, seed=random_state, test_size=test_size, val_size=val_size)
    tasks = [
        (model, kind, rep, derived_seed(random_state, rep)) for kind in splits for model in models
        for rep in range(n_splits)
    ]
    records = _parallel(
        tasks,
        lambda t: (td.X, y, td.groups, td.order, t[0], t[1], t[2], t[3], threshold, model_params.get(t[0], {}),
                   test_size, val_size),
        n_jobs=n_jobs,
        progress=progress,
        description=f"{label}evaluating {len(models)} model(s) x {len(splits)} split(s) x {n_splits}",
    )
    records = pd.DataFrame(records).sort_values(["split", "model", "rep"], kind="stable").reset_index(drop=True)
    settings = {
        "models": list(models),
        "splits": list(splits),
        "n_splits": n_splits,
        "test_size": test_size,
        "val_size": val_size,
        "threshold": str(threshold),
        "random_state": random_state,
        "n_candidates": len(td),
        # Triaged rows no model is asked about (features.matrix.not_scorable), left out, by label.
        "not_scorable_left_out": dict(td.left_out),
        "n_positive": int(y.sum()),
        "n_series": int(len(np.unique(td.groups))),
        # Candidates another series repeats row for row: each can leak across a grouped split.
        "twin_candidates": int(len(cross_series_twins(td.X, td.groups, np.arange(len(y)), np.arange(len(y))))),
        "features": td.columns,
        "data_hash": td.data_hash(),
        "model_params": model_params,
    }
    return EvaluationResult(records, settings)


def _parallel(tasks, args_of, *, n_jobs: int, progress: bool, description: str) -> list[dict]:
    from joblib import Parallel, delayed
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    jobs = (delayed(_run_one)(*args_of(t)) for t in tasks)
    runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    out: list[dict] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not progress,
        transient=False,
        # stderr: stdout carries the tables (and a file it is redirected to got the bars)
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task(description, total=len(tasks))
        for rec in runner(jobs):
            out.append(rec)
            bar.advance(task)
    return out


# ---------------------------------------------------------------------- window study


def window_study(
    build_matrix: Callable[[int | str], pd.DataFrame],
    windows: Sequence[int | str] = WINDOWS,
    *,
    model: str = "rf",
    split: str = "random",
    n_splits: int = 100,
    features=None,
    random_state: int = 0,
    n_jobs: int = 1,
    progress: bool = True,
    model_params: dict[str, object] | None = None,
) -> pd.DataFrame:
    """Metrics against the window size (paper Fig. 2).

    ``build_matrix(w)`` returns the feature matrix for window ``w`` (an int or
    ``"adaptive"``). Returns one row per window: ``window``, ``n_candidates``
    and each metric's ``_mean``, ``_sd``, ``_ci_low``, ``_ci_high``.
    """
    rows = []
    for w in windows:
        matrix = build_matrix(w)
        result = evaluate(
            matrix,
            models=[model],
            splits=[split],
            n_splits=n_splits,
            features=features,
            random_state=random_state,
            n_jobs=n_jobs,
            progress=progress,
            model_params={model: model_params or {}},
            label=f"window {w}: ",
        )
        row = result.summary().iloc[0].to_dict()
        left_out = result.settings.get("not_scorable_left_out")
        row.update({"window": str(w), "n_candidates": result.settings["n_candidates"],
                    "n_not_scorable": int(sum(left_out.values())) if isinstance(left_out, dict) else 0})
        rows.append(row)
    table = pd.DataFrame(rows)
    first = ["window", "model", "split", "n_candidates", "n"]
    return table[first + [c for c in table.columns if c not in first]]


def window_markdown(table: pd.DataFrame) -> str:
    """The window study as a Markdown table: window, candidates, AUC and accuracy with 95 % intervals."""
    out = pd.DataFrame(
        {
            "window": table["window"],
            "candidates": table["n_candidates"],
            **{
                m: [f"{r[f'{m}_mean']:.3f} [{r[f'{m}_ci_low']:.3f}, {r[f'{m}_ci_high']:.3f}]" for _, r in table.iterrows()]
                for m in ("auc", "accuracy")
            },
        }
    )
    return _markdown(out)
