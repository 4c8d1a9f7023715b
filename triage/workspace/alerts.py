"""The alerts a sheriff reviews: one per detector candidate, with what a person needs to decide.

Each :class:`Alert` carries the series name (suite / test / platform where
the candidate file names them, e.g. a Perfherder export; else the series
id), the commit, its date, the % change of the median and its direction
(regression or improvement from the series' ``higher_is_better``; a plain
change when the data does not say which way is better), P(true) and the model's call,
the detector that raised it, and a plain reason computed from the values
around the commit (:func:`reason`), e.g. "median rose 12% (5.0 noise sd) and
stayed up for 30 commits".
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from triage.candidate_files import CandidateTable, read_candidates, resolve
from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.core.noise import diff_noise
from triage.readers.source import display_name, plain_file
from triage.steps import relative_change, with_directions

#: Commits on each side of a candidate used for the medians of the reason.
REASON_WINDOW = 30
#: The detector column of a decided alert that is no candidate of the queue's file.
DECIDED_EARLIER = "decided earlier (not a candidate here)"
#: Consecutive commits whose median must fall back for the change to end.
SETTLE = 5


@dataclass
class Alert:
    """One candidate in the queue (``key`` = (series_id, commit) identifies it)."""

    series_id: str
    name: str
    commit: str
    index: int
    date: pd.Timestamp | None
    change_pct: float
    direction: str  # "regression", "improvement", "change" (which way is better unknown) or "none"
    detector: str
    data_label: str
    reason: str
    p_true: float | None = None
    model_call: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.series_id, self.commit)


def _noise_sd(values: np.ndarray) -> float:
    """Robust noise level: the MAD of first differences / sqrt(2), so a slow drift is not noise."""
    if len(values) < 3:
        return float(np.std(values)) if len(values) else 0.0
    mad = diff_noise(values)
    # Differences that are equal but for float rounding (1.1 - 1.0 vs 5.1 - 5.0) have a MAD
    # of a few ulps: no noise at all, not a noise that makes every change 1e15 sd.
    if mad <= 1e-9 * float(np.max(np.abs(values))):
        mad = 0.0
    return mad if mad > 0 else float(np.std(values))


def settle_medians(values: np.ndarray) -> np.ndarray:
    """The median of the finite values of each run of :data:`SETTLE` commits (``values[j:j + SETTLE]``).

    Shape ``(max(0, n - SETTLE + 1),)``; NaN where a run has no finite value.
    Computed once per series: :func:`change_at` reads how long each change
    lasted from it (a slice per alert) instead of one median per commit
    after every alert, which cost O(n) Python-level medians per alert (100
    alerts on a 40,000-commit staircase: 35 s).
    """
    v = np.asarray(values, dtype=np.float64)
    if len(v) < SETTLE:
        return np.empty(0, dtype=np.float64)
    runs = np.lib.stride_tricks.sliding_window_view(np.where(np.isfinite(v), v, np.nan), SETTLE)
    if np.isfinite(v).all():
        return np.median(runs, axis=1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a run of only missing values: NaN, skipped
        return np.nanmedian(runs, axis=1)


def change_at(
    history: History, i: int, window: int = REASON_WINDOW, *, settled: np.ndarray | None = None,
    confirmed: np.ndarray | None = None,
) -> tuple[float, float, float, int, bool]:
    """(median before, median after, noise sd, commits the new level lasted, lasted to the end).

    Neither side reaches over a confirmed change point (``true_positive``) of
    the history, as the report's step does: a step to 110 followed 12 commits
    later by a confirmed one to 130 read "came straight back (a spike)" (the
    30 commits after it had their median at 130). The new level then lasts at
    most to the next confirmed change. ``settled``: :func:`settle_medians` of
    the history's values, ``confirmed``: ``history.confirmed()``, when the
    caller has them (one computation for all the alerts of a series).
    """
    v = history.values
    n = len(v)
    if confirmed is None:
        confirmed = history.confirmed()
    earlier, later = confirmed[confirmed < i], confirmed[confirmed > i]
    start = max(0, i - window, int(earlier[-1]) if len(earlier) else 0)
    stop = int(later[0]) if len(later) else n  # the next level's first commit
    # Missing values (a failed run) are left out of the medians, not allowed to make them NaN.
    pre = v[start: i]
    pre = pre[np.isfinite(pre)]
    post = v[i: min(i + window, stop)]
    post = post[np.isfinite(post)]
    if len(pre) == 0 or len(post) == 0:
        return float("nan"), float("nan"), float("nan"), 0, False
    before, after = float(np.median(pre)), float(np.median(post))
    sd = _noise_sd(pre if len(pre) >= 3 else np.concatenate([pre, post]))
    mid = (before + after) / 2.0
    up = after >= before
    # The change lasts while the rolling median of SETTLE commits stays past the midpoint, up to
    # the next confirmed change (runs that reach into it belong to the next level).
    lasted = stop - i
    if settled is None:
        settled = settle_medians(v)
    ahead = settled[i: max(i, stop - SETTLE + 1)]  # NaN (no finite value) compares False: skipped
    back = np.flatnonzero(ahead < mid if up else ahead > mid)
    if back.size:
        lasted = int(back[0])
    return before, after, sd, lasted, i + lasted >= n


def reason(history: History, i: int, *, settled: np.ndarray | None = None,
           confirmed: np.ndarray | None = None) -> tuple[str, float, str]:
    """Plain words for the change at ``i``, its % change and direction.

    Returns (reason, % change of the median, "regression" | "improvement" | "change" | "none"):
    "change" when the data does not say which way is better (``higher_is_better``
    None, e.g. a long-layout file), rather than guessing and calling a drop
    in ops/s an improvement.
    """
    before, after, sd, lasted, to_end = change_at(history, i, settled=settled, confirmed=confirmed)
    if not np.isfinite(before) or not np.isfinite(after):
        n = len(history)
        where = ("the first commit of the history" if i == 0 else "the last commit of the history" if i == n - 1
                 else "values missing around this commit")
        return f"{where}: no values on one side", float("nan"), "none"
    if after == before:
        return "median unchanged", 0.0, "none"
    # The report's rule (triage.steps): no per cent of a level within its noise of 0 (a serve
    # page said "+3009.4%" where the report said "+5.312 (level near 0)").
    change = relative_change(before, after, sd)
    pct = float("nan") if change is None else change
    rose = after > before
    direction = history.change_kind(before, after)
    verb = "rose" if rose else "fell"
    size = f"{abs(pct):.3g}%" if np.isfinite(pct) else f"from {before:.4g} to {after:.4g} (level near 0)"
    noise = f" ({abs(after - before) / sd:.1f} noise sd)" if sd > 0 else " (noise-free series)"
    side = "up" if rose else "down"
    following = confirmed if confirmed is not None else history.confirmed()
    nxt = following[following > i]
    if to_end:
        stay = f"stayed {side} to the end of the history ({lasted} commit{'' if lasted == 1 else 's'})"
    elif len(nxt) and i + lasted >= int(nxt[0]) and lasted > 1:
        stay = f"stayed {side} until the next confirmed change ({lasted} commits)"
    elif lasted <= 1:
        stay = "came straight back (a spike)"
    else:
        stay = f"stayed {side} for {lasted} commits"
    return f"median {verb} {size}{noise} and {stay}", pct, direction


def _display_names(table: CandidateTable) -> list[str | None]:
    """Suite / test / platform of each candidate when the detector's file names them (Perfherder)."""
    f = table.fields
    cols = [[c for c in (f"signature_{k}", k) if c in f.columns] for k in ("suite", "test", "machine_platform")]
    if "platform" in f.columns and not cols[2]:
        cols[2] = ["platform"]
    if not any(cols):
        return [None] * len(table)
    out: list[str | None] = []
    for _, rec in f.iterrows():
        parts = []
        for options in cols:
            for c in options:
                val = rec.get(c)
                if val is not None and not (isinstance(val, float) and np.isnan(val)) and str(val).strip():
                    parts.append(str(val).strip())
                    break
        out.append(" / ".join(parts) if parts else None)
    return out


def _detectors(table: CandidateTable) -> list[str]:
    if "detector" in table.fields.columns:
        return [str(d) for d in table.fields["detector"].fillna("")]
    name = {"otava-json": "otava", "otava-csv": "otava", "perfherder-json": "perfherder",
            "perfherder-csv": "perfherder"}.get(table.layout, table.layout)
    return [name] * len(table)


def _has(history: History, commit: str) -> bool:
    try:
        history.index_of(commit)
    except KeyError:
        return False
    return True


def build_alerts(
    dataset: Dataset,
    candidates: str | Path | None = None,
    classifier=None,
    newest="manifest",
    *,
    model_name: str | None = None,
    decided: Iterable[tuple[str, str]] = (),
) -> list[Alert]:
    """Every alert of the workspace.

    ``candidates``: a detector's file (any layout :func:`read_candidates`
    reads); without it, the candidates labelled in the data (any non-empty
    label). ``classifier``: when given, P(true) and the model's call per
    alert (:func:`triage.scoring.score_candidates`, at the threshold ``triage
    score`` uses: :func:`triage.scoring.default_threshold`); ``newest``: the
    model for the candidates near their series' end, as ``triage score
    --newest-model`` gives it (:func:`triage.scoring.score_candidates`).
    ``decided``: (series, commit) of the labels store's decided alerts; one
    that is no candidate here (another detector's file, another run) is
    listed too, after the others' order, without P(true) (scoring it would
    change the windows of its neighbours), as "decided earlier": a queue built
    from another candidates file had hidden 9 of 40 decisions without a word,
    and showed the same change untriaged a commit away.
    """
    if candidates is not None:
        # Compressed (told by its bytes) or `-`, as `triage score` reads the same file; errors
        # and the later placing name the file given, not the decompressed copy.
        with plain_file(candidates, directory_ok=False) as plain:
            table = read_candidates(plain)
        table.source = display_name(candidates)
        names = _display_names(table)
        detectors = _detectors(table)
    else:
        sids = [h.series_id for h in dataset for _ in h.candidates()]
        idx = [int(i) for h in dataset for i in h.candidates()]
        table = CandidateTable.from_points(sids, idx, source=str(dataset.source))
        names = [None] * len(table)
        detectors = ["labelled in the data"] * len(table)
    decided = [(sid, commit) for sid, commit in decided if sid in dataset and _has(dataset[sid], commit)]
    if len(table) == 0 and not decided:
        return []
    series, index = resolve(dataset, table) if len(table) else ([], np.empty(0, dtype=np.int64))
    dataset = with_directions(dataset, table.fields, series)  # a Perfherder export's lower_is_better
    p_true: list[float | None] = [None] * len(table)
    calls: list[str | None] = [None] * len(table)
    if classifier is not None:
        from triage.scoring import default_threshold, score_candidates

        # The call `triage score` makes: a scoring model's threshold for the file's detector.
        cut, _ = default_threshold(classifier, table)
        scored = score_candidates(dataset, table, classifier, threshold=cut, explain_top=0, newest=newest)
        pcol = "triage_p_true" if "triage_p_true" in scored.columns else "p_true"
        ccol = "triage_classification" if "triage_classification" in scored.columns else "classification"
        # An alert with no commit before it in its window has no P(true) (not_scorable): None, as without
        # a model, so the queue shows no "nan" and sorts it after the scored ones.
        p_true = [None if pd.isna(p) else float(p) for p in scored[pcol]]
        calls = [str(c) for c in scored[ccol]]
    alerts: dict[tuple[str, str], Alert] = {}
    settled: dict[str, np.ndarray] = {}  # each series' settle_medians, computed once for all its alerts
    confirmed: dict[str, np.ndarray] = {}  # and its confirmed change points
    for k, (sid, i) in enumerate(zip(series, index.tolist(), strict=True)):
        h = dataset[sid]
        commit = str(h.commits[i])
        if (sid, commit) in alerts:  # the same commit flagged twice (two detectors): one alert
            alerts[(sid, commit)].detector += f", {detectors[k]}" if detectors[k] not in alerts[(sid, commit)].detector else ""
            continue
        if sid not in settled:
            settled[sid] = settle_medians(h.values)
            confirmed[sid] = h.confirmed()
        why, pct, direction = reason(h, i, settled=settled[sid], confirmed=confirmed[sid])
        date = None
        if h.timestamps is not None and not pd.isna(h.timestamps[i]):
            date = pd.Timestamp(h.timestamps[i])
        alerts[(sid, commit)] = Alert(
            series_id=sid, name=names[k] or sid, commit=commit, index=int(i), date=date, change_pct=pct,
            direction=direction, detector=detectors[k] or "unknown", data_label=str(h.labels[i]), reason=why,
            p_true=p_true[k], model_call=calls[k],
        )
    for sid, commit in decided:
        if (sid, commit) in alerts:
            continue
        h = dataset[sid]
        i = h.index_of(commit)
        if sid not in settled:
            settled[sid] = settle_medians(h.values)
            confirmed[sid] = h.confirmed()
        why, pct, direction = reason(h, i, settled=settled[sid], confirmed=confirmed[sid])
        date = pd.Timestamp(h.timestamps[i]) if h.timestamps is not None and not pd.isna(h.timestamps[i]) else None
        alerts[(sid, commit)] = Alert(
            series_id=sid, name=sid, commit=commit, index=int(i), date=date, change_pct=pct, direction=direction,
            detector=DECIDED_EARLIER, data_label=str(h.labels[i]), reason=why,
        )
    return list(alerts.values())


def refresh_reasons(alerts: Iterable[Alert], history: History, decided: Mapping[str, str]) -> None:
    """Word again the reasons of one series' alerts with its sheriffs' decisions as its confirmed changes.

    ``decided``: commit -> label of the series' current decisions in the
    labels store. A reason's windows stop at confirmed changes; the data's
    labels alone were taken, so after a sheriff confirmed a step the next
    alert's reason still reached back over it ("median fell 10.7% ... and
    stayed down for 65 commits" where the plot drew the confirmed change),
    until the store was exported and served again. A sheriff's decision
    stands over the data's label, as in the queue's status: "true" makes a
    confirmed change, "false" or "unsure" takes one back. Called when the
    workspace starts and after each decision or undo
    (:mod:`triage.workspace.app`); ``history`` must carry the direction the
    alerts were built with (:attr:`Workspace.dataset`).
    """
    made = [history.index_of(c) for c, label in decided.items() if label == L.TRUE_POSITIVE and _has(history, c)]
    taken = [history.index_of(c) for c, label in decided.items() if label != L.TRUE_POSITIVE and _has(history, c)]
    confirmed = np.setdiff1d(np.union1d(history.confirmed(), np.asarray(made, dtype=np.int64)),
                             np.asarray(taken, dtype=np.int64)).astype(np.int64)
    settled = settle_medians(history.values)
    for a in alerts:
        a.reason, a.change_pct, a.direction = reason(history, a.index, settled=settled, confirmed=confirmed)


def status_of(alert: Alert, decided: str | None) -> str:
    """The alert's status word: the sheriff's decision, else the data's label, else untriaged."""
    label = decided if decided is not None else alert.data_label
    if label == L.TRUE_POSITIVE:
        return "true"
    if label == L.FALSE_POSITIVE:
        return "false"
    if label == L.UNDER_INVESTIGATION and decided is not None:
        return "unsure"
    return "untriaged"
