"""Score change-point candidates from any detector with the triage model.

A statistical detector (ours, Apache Otava, Mozilla Perfherder) flags commits;
the model trained on human triage says how likely each flag is a real change
and decides under the model's threshold policy, or an override. Every
decision keeps the detector's own fields and adds::

    series_id, commit, index, p_false, p_true, classification, explanation, change_pct, change_kind

(``change_pct`` / ``change_kind``: the step at the candidate, signed per cent
of the level before and regression / improvement / change, as the report
gives it: :mod:`triage.steps`;
``series_id`` / ``commit`` / ``index`` are added when the input has no such
column, and as ``triage_<name>`` when the input's column says something else,
e.g. an Otava index that differs from the commit's position; a detector
column named like one of the others is kept and ours is prefixed
``triage_``). A file that already has all four score columns is our own
output fed back: those columns (and their ``triage_`` copies) are replaced.

One change, one alert: a scoring model whose manifest has
``extra.suppress_radius`` r > 0 (chosen with its thresholds on fit and
validation data) keeps, among the candidates it calls true in one series, only
the strongest (highest P(true)) of those within r commits of each other; the
others become ``false_positive`` with the explanation "duplicate: a stronger
candidate is within r commits". Over-segmenting detectors flag several
commits around one change, and TCPDBench-style scoring (and a sheriff) counts
all but one as false alarms. Nothing is suppressed when the threshold is 0
(triage off for that detector).

Candidate files (ours, Otava's, Perfherder's) are read and placed in the
dataset by :mod:`triage.candidate_files`; the model is applied by
:mod:`triage.inference`, as in batch labelling.

The newest candidates
---------------------
A candidate fewer than ``horizon`` (13) commits from its series' end has
too few commits after it for the model to see its new level hold
(``ctx_persist_after`` is missing), and a model trained only on changes
far from an end scores it low whatever its size. ``triage score
--newest-model NAME`` (or a scoring model whose manifest names one:
``extra.newest_model = {"model": NAME, "horizon": 13}``, NAME a directory
beside the scoring model's, else a bundled model) hands those candidates
to a *newest-candidates model*: P(true), call and threshold (its own
per-detector one unless ``--threshold`` is given) come from that model,
and the explanation says so (:func:`newest_route`). The bundled
``scoring-newest`` is such a model, trained with such candidates; the
bundled ``default-scoring`` names none (the trade it makes on real data:
README, "Scoring a detector's fresh alerts").

Threshold for ``--target-recall``
---------------------------------
A target recall needs labelled validation data. The model directory keeps
the threshold chosen at training time (its manifest's ``threshold``), but not
the validation curve. So :func:`threshold_for_recall` measures the curve on
the *triaged candidates of the data being scored* (``true_positive`` /
``false_positive`` labels): the highest threshold whose recall on them
reaches the target (:func:`triage.training.thresholds.choose_threshold`),
with the rows ``triage score`` would give those candidates (:func:`model_rows`:
for a candidate-bounded model, the triaged candidates as one detector run,
without a detector score); a candidate with no commit before it in its window
(at its series' first commit or right after a confirmed change point) is left
out: :func:`~triage.inference.decide` gives it no P(true)
(:func:`triage.inference.not_scorable`). When the
model was trained on those same candidates the curve is optimistic (recall
on unseen alerts will be lower); pass data the model has not seen for an
honest threshold, or train with ``--target-recall`` instead, which uses a
held-out validation split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from triage.candidate_files import CandidateTable, resolve
from triage.core import labels
from triage.core.errors import InputError
from triage.core.history import Dataset
from triage.features.extract import extract_features
from triage.inference import (
    DETECTOR_SCORE_RANK,
    NOT_SCORABLE_WHY,
    candidate_windowing,
    decide,
    model_features,
    model_window,
    not_scorable,
    probabilities,
    shift_measures,
)
from triage.steps import STEP_COLUMNS, step_columns, with_directions
from triage.training.thresholds import TargetRecall, choose_threshold, suppress_duplicates

#: Columns added to every scored candidate.
SCORE_COLUMNS: tuple[str, ...] = ("p_false", "p_true", "classification", "explanation")


# --------------------------------------------------------------------------- scoring


def suppress_radius(classifier) -> int:
    """Commits within which a scoring model keeps only the strongest true call (0 = none).

    Chosen with the thresholds on fit and validation data and kept in the
    manifest's ``extra.suppress_radius`` (:func:`triage.training.thresholds.suppress_duplicates`).
    """
    extra = (getattr(classifier, "manifest_", None) or {}).get("extra") or {}
    try:
        return max(0, int(extra.get("suppress_radius", 0)))
    except (TypeError, ValueError):
        return 0


def default_threshold(classifier, table: CandidateTable) -> tuple[float, str]:
    """The threshold for ``table`` without an override, and how it was chosen.

    A scoring model keeps one validation threshold per detector (never
    lowering that detector's validation F1); a file whose ``detector`` column
    names one detector it knows gets that one (a Perfherder alerts export is
    ``perfherder``'s, an Otava report ``edivisive``'s:
    :meth:`CandidateTable.detectors`), anything else the model's own.
    """
    from triage.inference import detector_threshold

    named = table.detectors()
    if len(named) == 1 and (cut := detector_threshold(classifier, str(named[0]))) is not None:
        # (in the summary's brackets: no brackets of its own; "triage off" only where it is)
        off = ": 0, triage off" if cut == 0 else ""
        return cut, f"the model's for {named[0]}, chosen on fit and validation data{off}"
    extra = (getattr(classifier, "manifest_", None) or {}).get("extra") or {}
    if extra.get("detector_thresholds"):
        # The policy text of such a model describes its per-detector thresholds ("per detector;
        # else 0"): printed for a file it has none for, it read as if this cut were that file's.
        why = (f"none for detector {named[0]!r}" if len(named) == 1
               else f"none for a file of several detectors ({', '.join(named[:4])}{', ...' if len(named) > 4 else ''})"
               if named else "the file names no detector")
        return float(classifier.threshold_), f"the model's general threshold; of its per-detector ones, {why}"
    return float(classifier.threshold_), f"the model's, policy {classifier.threshold_policy_}"


def detector_score_rank(table: CandidateTable) -> np.ndarray:
    """Each candidate's ``score`` ranked among the file's (0-1], NaN without a numeric score column."""
    if "score" not in table.fields.columns:
        return np.full(len(table), np.nan)
    score = pd.to_numeric(table.fields["score"], errors="coerce").reset_index(drop=True)
    return _merge_near_ties(score).rank(pct=True).to_numpy(dtype=float)


#: Scores this close (relative to their size) are one score to the rank.
SCORE_TIE_RTOL = 1e-12


def _merge_near_ties(score: pd.Series) -> pd.Series:
    """``score`` with values within :data:`SCORE_TIE_RTOL` of the next smaller one set to it (NaN kept).

    The same series in another unit (seconds for nanoseconds, x 1e9) gets the
    detector's score again up to its last digits; ranked apart, those copies
    got different ``det_score_rank`` and so different P(true) in one file.
    """
    values = score.to_numpy(dtype=np.float64, copy=True)
    finite = np.flatnonzero(np.isfinite(values))
    if finite.size < 2:
        return score
    order = finite[np.argsort(values[finite], kind="stable")]
    ranked = values[order]
    close = np.diff(ranked) <= SCORE_TIE_RTOL * np.maximum(np.abs(ranked[1:]), np.abs(ranked[:-1]))
    if not close.any():
        return score
    # Each run of near-equal neighbours takes its first (smallest) value.
    starts = np.concatenate([[True], ~close])
    values[order] = ranked[np.flatnonzero(starts)[np.cumsum(starts) - 1]]
    return pd.Series(values, index=score.index)


def model_rows(
    dataset: Dataset,
    classifier,
    series: list[str] | np.ndarray,
    index: np.ndarray,
    *,
    table: CandidateTable | None = None,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """The feature rows ``classifier`` is applied to, one per candidate (``series[k]``, ``index[k]``), in that order.

    What ``triage score`` gives a model (:func:`score_candidates`) and what
    :func:`threshold_for_recall` measures its curve on; the one place the
    rows are built. A model trained on candidate-bounded windows
    (:func:`triage.inference.candidate_windowing`) gets those windows, the
    given candidates being one detector run (Pre and After stop at the
    neighbouring ones in the same series and at confirmed change points, at
    most ``max_len`` commits) and, as its manifest says, the ``pair_*`` /
    ``ctx_*`` columns; any other model its training window. A model naming
    ``det_score_rank`` gets the rank of ``table``'s ``score`` column (NaN
    without ``table`` or without a numeric ``score``). Repeated candidates
    are described once and repeated in the rows. ``n_jobs``: processes for
    feature extraction.
    """
    wanted: dict[str, list[int]] = {}
    for sid, i in zip(series, np.asarray(index, dtype=np.int64).tolist(), strict=True):
        wanted.setdefault(str(sid), []).append(i)
    # One extraction for all (unique) points, then rows back in input order.
    honest = candidate_windowing(classifier)
    if honest is not None:
        matrix = extract_features(
            dataset, candidates=wanted, candidate_windows=True, max_len=int(honest["max_len"]),  # type: ignore[call-overload]
            pair=bool(honest["pair"]), context=bool(honest["context"]), n_jobs=n_jobs,
        )
    else:
        matrix = extract_features(dataset, candidates=wanted, window=model_window(classifier),
                                  pair=shift_measures(classifier), n_jobs=n_jobs)
    where = pd.MultiIndex.from_arrays([matrix["series_id"].astype(str), matrix["index"].astype(np.int64)])
    asked = pd.MultiIndex.from_arrays([np.asarray(series, dtype=str), np.asarray(index, dtype=np.int64)])
    matrix = matrix.iloc[where.get_indexer(asked)].reset_index(drop=True)
    if DETECTOR_SCORE_RANK in model_features(classifier):
        matrix[DETECTOR_SCORE_RANK] = detector_score_rank(table) if table is not None else np.nan
    return matrix


def too_recent_to_hold(dataset: Dataset, classifier, series, index) -> np.ndarray:
    """Bool per candidate: the model reads whether the new level held, and too few commits follow to tell.

    Such candidates (fewer than :data:`~triage.features.candidate_context.HOLD_HORIZON`
    commits from the candidate to the series' end) are scored low whatever
    their size: README, "Scoring a detector's fresh alerts".
    """
    from triage.features.candidate_context import HOLD_HORIZON

    index = np.asarray(index, dtype=np.int64)
    if "ctx_persist_after" not in model_features(classifier):
        return np.zeros(index.size, dtype=bool)
    return near_end(dataset, series, index, HOLD_HORIZON)


#: The manifest entry (in ``extra``) naming a scoring model's newest-candidates model.
NEWEST_KEY = "newest_model"


@dataclass(frozen=True)
class NewestRoute:
    """The model that decides the candidates fewer than ``horizon`` commits from their series' end.

    ``name``: how it was named (a bundled name or a path), for the
    explanation and the summary; ``classifier``: the loaded model.
    """

    classifier: object
    horizon: int
    name: str


def newest_route(classifier, spec: str | Path | None = None) -> NewestRoute | None:
    """The newest-candidates model for ``classifier`` (module docstring, "The newest candidates").

    ``spec`` None: the one the scoring model's manifest names (None when it
    names none); ``"none"``: no routing; anything else: a model directory or
    bundled name, with the manifest's horizon (else
    :data:`~triage.features.candidate_context.HOLD_HORIZON`). The named
    model must build its rows as the scoring model does (same windows, its
    features among the scoring model's rows); :class:`InputError` otherwise,
    when it cannot be found, when ``spec`` is empty (an unset variable) or
    when it names the scoring model itself.
    """
    from triage.features.candidate_context import HOLD_HORIZON
    from triage.inference import load_classifier
    from triage.model_lookup import bundled_model, resolve_model
    from triage.training.model_dirs import MANIFEST

    manifest = getattr(classifier, "manifest_", None) or {}
    entry = (manifest.get("extra") or {}).get(NEWEST_KEY)
    source = manifest.get("_path")
    if spec is not None and str(spec).strip().lower() == "none":
        return None
    horizon = HOLD_HORIZON
    if isinstance(entry, dict):
        try:
            horizon = int(entry.get("horizon", HOLD_HORIZON))
        except (TypeError, ValueError):
            raise InputError(source, None, f"manifest: extra.{NEWEST_KEY}.horizon is not a whole number") from None
        if horizon < 1:
            raise InputError(source, None, f"manifest: extra.{NEWEST_KEY}.horizon must be at least 1")
    if spec is None:
        if entry is None:
            return None
        name = entry.get("model") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip() or "/" in name or name.startswith("."):
            raise InputError(source, None, f"manifest: extra.{NEWEST_KEY} names no model (want "
                             '{"model": NAME, "horizon": 13}, NAME a directory beside this model or a bundled model)')
        beside = Path(source).parent / name if source else None
        path = beside if beside is not None and (beside / MANIFEST).is_file() else bundled_model(name)
    else:
        name = str(spec).strip()
        if not name:
            raise InputError(None, None, "--newest-model is empty: give a newest-candidates model "
                             "(e.g. scoring-newest), or none")
        path = resolve_model(name, "scoring")
    if source and Path(path).resolve() == Path(source).resolve():
        raise InputError(path, None, "this is the scoring model itself, not a newest-candidates model: give one "
                         "trained on candidates near a series' end (e.g. scoring-newest), or none")
    newest = load_classifier(path)
    if candidate_windowing(newest) != candidate_windowing(classifier) or model_window(newest) != model_window(classifier):
        raise InputError(path, None, "this newest-candidates model builds other windows than the scoring model "
                         f"{source or ''} (the one --model or $TRIAGE_MODEL names): both must be trained on the "
                         "same windows (e.g. --model default-scoring with scoring-newest)")
    return NewestRoute(newest, horizon, name)


def near_end(dataset: Dataset, series, index, horizon: int) -> np.ndarray:
    """Bool per candidate (``series[k]``, ``index[k]``): fewer than ``horizon`` commits from it to its series' end."""
    index = np.asarray(index, dtype=np.int64)
    lengths = {h.series_id: len(h.values) for h in dataset}
    ends = np.array([lengths.get(str(s), 0) for s in series], dtype=np.int64)
    return (ends - index) < horizon


def threshold_for_recall(dataset: Dataset, classifier, recall: float, *, n_jobs: int = 1) -> tuple[float, int]:
    """The highest threshold reaching ``recall`` on the triaged candidates of ``dataset``.

    Candidates no model can judge (no commit before them in their window:
    :func:`triage.inference.not_scorable`) are left out, as scoring gives
    them no P(true). Returns (threshold, number of triaged candidates used). Raises
    :class:`InputError` when ``dataset`` has no true and false alerts to
    measure recall on (see the module docstring for why and the caveat).
    """
    policy = TargetRecall(float(recall))
    if not 0.0 < policy.recall <= 1.0:
        raise InputError(None, None, f"target recall {recall} is outside (0, 1]")
    triaged = [(h.series_id, int(i)) for h in dataset for i in h.indices_with(labels.TRIAGED)]
    matrix = model_rows(dataset, classifier, [sid for sid, _ in triaged],
                        np.array([i for _, i in triaged], dtype=np.int64), n_jobs=n_jobs)
    unjudged = not_scorable(matrix)
    matrix = matrix[~unjudged]
    y = matrix["label"].to_numpy() == labels.TRUE_POSITIVE if len(matrix) else np.array([], dtype=bool)
    if len(matrix) == 0 or y.all() or not y.any():
        left_out = (f" ({int(unjudged.sum()):,} not scorable left out: {NOT_SCORABLE_WHY})"
                    if unjudged.any() else "")
        raise InputError(
            dataset.source,
            None,
            "--target-recall needs triaged candidates (both true_positive and false_positive labels) in --data "
            f"to measure recall on{left_out}; give --threshold instead",
        )
    proba = probabilities(classifier, matrix)[0][:, 1]
    return choose_threshold(policy, y.astype(np.int64), proba), int(len(y))


def score_candidates(
    dataset: Dataset,
    table: CandidateTable,
    classifier,
    *,
    threshold: float | None = None,
    explain_top: int = 3,
    n_jobs: int = 1,
    newest: NewestRoute | None | Literal["manifest"] = "manifest",
    newest_threshold: float | None = None,
    radius: int | None = None,
) -> pd.DataFrame:
    """P(true change) and a decision for every candidate of ``table``.

    Windows: a scoring model trained on candidate-bounded windows
    (:func:`triage.inference.candidate_windowing`, the bundled
    ``default-scoring``) gets exactly those: Pre and After stop at the
    neighbouring candidates *of this file* in the same series (one file = one
    detector run) and at confirmed change points (``true_positive`` labels),
    at most ``max_len`` commits each; no confirmed change point is needed.
    Any other model gets its training window, bounded by the confirmed change
    points. ``threshold`` (default: :func:`default_threshold`, the model's
    threshold for the file's detector) cuts P(true). The detector's ``score`` column, when the file has one, becomes
    ``det_score_rank`` (its rank among the file's scores; missing otherwise).
    Returns the detector's fields plus the columns of the module docstring,
    in input order. ``n_jobs``: processes for feature extraction.

    ``newest``: the model for the candidates near their series' end
    (module docstring, "The newest candidates"); ``"manifest"`` (default):
    the one ``classifier``'s manifest names (:func:`newest_route`), None:
    none. ``newest_threshold``: its cut (default: its own for the file's
    detector, :func:`default_threshold`). ``radius``: of the true calls within
    this many commits of each other only the strongest stays true (default:
    the model's, :func:`suppress_radius`; 0 keeps them all).
    """
    if threshold is None:
        # The file's detector's own threshold, as `triage score` takes it: the model's general
        # one (the bundle's: hybrid_ks's 0.0175) called the demo's perfherder alerts at P 0.12 true.
        threshold, _ = default_threshold(classifier, table)
    series, index = resolve(dataset, table)
    dataset = with_directions(dataset, table.fields, series)
    matrix = model_rows(dataset, classifier, series, index, table=table, n_jobs=n_jobs)
    decided = decide(classifier, matrix, threshold=threshold, explain_top=explain_top)
    cut = float(threshold)
    radius = suppress_radius(classifier) if radius is None else radius
    if radius < 0:
        raise ValueError(f"the suppression radius must be 0 or more commits, not {radius}")
    suppress = radius > 0 and cut > 0 and len(decided) > 0
    if suppress:
        decided = _one_alert_per_change(decided, series, index, radius)
    route = newest_route(classifier) if isinstance(newest, str) else newest
    if route is not None and len(decided):
        recent = routed_rows(dataset, series, index, route, matrix)
        if recent.any():
            decided = _decide_newest(route, table, matrix, decided, recent, newest_threshold, explain_top)
            if suppress:
                # Every other candidate keeps the call it had without routing: a routed one called
                # true near one of them (or near a stronger routed one) is the duplicate.
                decided = _one_alert_per_change(decided, series, index, radius, fixed=~recent)
    out = table.fields.reset_index(drop=True).copy()
    if set(SCORE_COLUMNS) <= set(out.columns):
        # Our own earlier output fed back (re-scoring): its scores are replaced, not kept beside the new ones.
        ours = [c for c in out.columns
                if c.removeprefix("triage_") in SCORE_COLUMNS or c.removeprefix("triage_") in STEP_COLUMNS]
        out = out.drop(columns=ours)
    added = {"series_id": matrix["series_id"], "commit": matrix["commit"], "index": matrix["index"]}
    for name, col in added.items():
        if name not in out.columns:
            out[name] = col.to_numpy()
        elif (out[name].astype(str).str.strip().to_numpy() != col.astype(str).to_numpy()).any():
            # e.g. Otava's per-metric index where the commit placed the change elsewhere
            out[f"triage_{name}"] = col.to_numpy()
    for name in SCORE_COLUMNS:
        target = name if name not in out.columns else f"triage_{name}"
        out[target] = decided[name].to_numpy()
    for name, values in zip(STEP_COLUMNS, step_columns(dataset, series, index), strict=True):
        out[name if name not in out.columns else f"triage_{name}"] = values
    return out


def _one_alert_per_change(decided: pd.DataFrame, series, index: np.ndarray, radius: int,
                          fixed: np.ndarray | None = None) -> pd.DataFrame:
    """``decided`` with each true call that a stronger one is within ``radius`` commits of made a duplicate.

    ``fixed``: rows whose calls stand (they outrank every other row).
    """
    true = decided["classification"].to_numpy() == labels.TRUE_POSITIVE
    strength = decided["p_true"].to_numpy(dtype=np.float64)
    if fixed is not None:
        strength = np.where(fixed, 2.0 + np.nan_to_num(strength), strength)
    keep = suppress_duplicates(np.asarray(series), np.asarray(index), strength, true, radius)
    # One alert listed twice (a Perfherder alert in two summaries) is one candidate, not its own
    # duplicate: every copy keeps the call of the one kept (else one row true, the other false).
    kept = {(str(s), int(i)) for s, i, k in zip(series, index.tolist(), keep, strict=True) if k}
    keep = keep | np.array([(str(s), int(i)) in kept for s, i in zip(series, index.tolist(), strict=True)])
    dropped = np.flatnonzero(true & ~keep)
    if dropped.size:
        decided = decided.copy()
        decided.loc[decided.index[dropped], "classification"] = labels.FALSE_POSITIVE
        note = f"duplicate: a stronger candidate is within {radius} commits"
        decided.loc[decided.index[dropped], "explanation"] = [
            f"{note}; {e}" if e else note for e in decided["explanation"].iloc[dropped]
        ]
    return decided


def route_threshold(route: NewestRoute, table: CandidateTable, threshold: float | None = None) -> float:
    """The cut for the routed candidates: ``threshold`` when given, else the newest model's for ``table``."""
    return default_threshold(route.classifier, table)[0] if threshold is None else float(threshold)


def routed_rows(dataset: Dataset, series, index, route: NewestRoute, matrix: pd.DataFrame | None = None) -> np.ndarray:
    """Bool per candidate: decided by ``route``'s model (near its series' end and, given ``matrix``, scorable)."""
    recent = near_end(dataset, series, index, route.horizon)
    if matrix is not None:
        recent &= ~not_scorable(matrix)  # no model judges those: no second warning, no "scored by"
    return recent


def _decide_newest(route: NewestRoute, table: CandidateTable, matrix: pd.DataFrame, decided: pd.DataFrame,
                   recent: np.ndarray, threshold: float | None, explain_top: int) -> pd.DataFrame:
    """``decided`` with the ``recent`` rows decided by ``route``'s model instead (same feature rows)."""
    missing = [n for n in model_features(route.classifier) if n not in matrix.columns]
    if missing:
        raise InputError(route.name, None, f"this newest-candidates model needs features the scoring model's rows lack: "
                         f"{', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
    cut = route_threshold(route, table, threshold)
    rows = matrix[recent]
    theirs = decide(route.classifier, rows, threshold=cut, explain_top=explain_top)
    note = f"newest-candidates model {route.name} (fewer than {route.horizon} commits from the series' end)"
    theirs["explanation"] = [f"{note}; {e}" if e else note for e in theirs["explanation"]]
    decided = decided.copy()
    for col in SCORE_COLUMNS:
        decided.loc[rows.index, col] = theirs[col].to_numpy()
    return decided
