"""Score change-point candidates from any detector with the triage model.

A statistical detector (ours, Apache Otava, Mozilla Perfherder) flags commits;
the model trained on human triage says how likely each flag is a real change
and decides under the model's threshold policy, or an override. Every
decision keeps the detector's own fields and adds::

    series_id, commit, index, p_false, p_true, classification, explanation

(``series_id`` / ``commit`` / ``index`` are added when the input has no such
column, and as ``triage_<name>`` when the input's column says something else,
e.g. an Otava index that differs from the commit's position; a detector
column named like one of the others is kept and ours is prefixed
``triage_``).

Candidate files (:func:`read_candidates`, layout detected from the content)
---------------------------------------------------------------------------
candidates CSV
    What ``triage candidates`` writes: ``series_id, commit, index, detector,
    score`` then detector fields. ``series_id`` is required, with ``commit``
    or ``index`` (0-based position in the series); with both they must agree.
Otava JSON report
    ``otava analyze --output json``: ``{test: [{"time", "attributes":
    {"commit", ...}, "changes": [{"metric", "index", "forward_change_percent",
    "magnitude", "mean_before", "stddev_before", "mean_after",
    "stddev_after", "pvalue"}, ...]}, ...]}``. One candidate per change; the
    series is the metric (how :func:`triage.loaders.read_otava_csv` names a
    metric column), else ``test.metric``; the commit is
    ``attributes.commit``, else the change's ``index``. Otava (and Hunter
    before it) prints no CSV report: its report types are ``log``, ``json``
    and ``regressions_only``; the flat CSV with the same fields, one row per
    change (``time, commit, metric, index, forward_change_percent, ...``), is
    read as well, e.g. ``jq``-flattened output.
Perfherder alerts
    The JSON of Perfherder's alert-summary API (``/api/performance/
    alertsummary/``: ``{"results": [summary, ...]}`` or a list of summaries,
    each with ``revision``, ``prev_push_revision``, ``status`` and
    ``alerts`` whose ``series_signature`` holds ``signature_hash``, ``id``,
    ``suite``, ``test``, ``machine_platform``), or a flat CSV export with a
    signature column (``signature_hash``, ``series_signature``,
    ``signature_id`` or ``signature``) and ``revision``. One candidate per
    alert, at the summary's ``revision`` (the push the alert blames). The
    series is the first of signature hash, signature id, ``"suite test
    platform"``, ``"suite test"`` that names a series of the data.

Rows are numbered as :class:`~triage.core.errors.InputError` does: the file line
for CSV (header = line 1), the 1-based change / alert record for JSON.

Threshold for ``--target-recall``
---------------------------------
A target recall needs labelled validation data. The model directory keeps
the threshold chosen at training time (its manifest's ``threshold``), but not
the validation curve. So :func:`threshold_for_recall` measures the curve on
the *triaged candidates of the data being scored* (``true_positive`` /
``false_positive`` labels): the highest threshold whose recall on them
reaches the target (:func:`training.thresholds.choose_threshold`). When the
model was trained on those same candidates the curve is optimistic (recall
on unseen alerts will be lower); pass data the model has not seen for an
honest threshold, or train with ``--target-recall`` instead, which uses a
held-out validation split.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from triage.batch_label import candidate_matrix, decide, model_features, model_window
from triage.core import labels as L
from triage.core.errors import InputError
from triage.core.history import Dataset
from triage.features.extract import extract_features
from triage.loaders import read_csv_text
from triage.training.thresholds import TargetRecall, choose_threshold

#: Input layouts :func:`read_candidates` knows.
LAYOUTS: tuple[str, ...] = ("auto", "candidates", "otava-json", "otava-csv", "perfherder-json", "perfherder-csv")

#: Columns added to every scored candidate.
SCORE_COLUMNS: tuple[str, ...] = ("p_false", "p_true", "classification", "explanation")

_SIGNATURE_COLUMNS = ("signature_hash", "series_signature", "signature_id", "signature")
_OTAVA_FIELDS = ("forward_change_percent", "magnitude", "mean_before", "mean_after", "pvalue")


@dataclass
class CandidateTable:
    """Candidates read from a detector's file.

    fields : the detector's own fields, one row per candidate (flattened for JSON)
    keys : per row, the series ids to try in order (first one in the data wins)
    commits : per row, the commit id or None
    indices : per row, the 0-based index or None
    rows : per row, the row number used in error messages
    layout : which layout was read
    source : the file
    """

    fields: pd.DataFrame
    keys: list[tuple[str, ...]]
    commits: list[str | None]
    indices: list[int | None]
    rows: list[int]
    layout: str
    source: str

    def __len__(self) -> int:
        return len(self.fields)

    @classmethod
    def from_points(cls, series_ids, indices, source: str = "<points>") -> CandidateTable:
        """Candidates given in code: series ids and 0-based indices, shapes (k,)."""
        sids = [str(s) for s in series_ids]
        idx = [int(i) for i in indices]
        if len(sids) != len(idx):
            raise ValueError(f"{len(sids)} series ids but {len(idx)} indices")
        fields = pd.DataFrame({"series_id": sids, "index": idx})
        return cls(fields, [(s,) for s in sids], [None] * len(sids), idx, list(range(1, len(sids) + 1)),
                   "candidates", source)


# --------------------------------------------------------------------------- reading


def read_candidates(path: str | Path, layout: str = "auto") -> CandidateTable:
    """Read a candidate file in any layout of the module docstring."""
    path = Path(path)
    if layout not in LAYOUTS:
        raise InputError(path, None, f"unknown candidate layout {layout!r} (use one of {', '.join(LAYOUTS)})")
    if not path.is_file():
        raise InputError(path, None, "no such candidate file")
    if layout == "auto":
        layout = _detect(path)
    if layout.endswith("json"):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise InputError(path, None, "not a UTF-8 text file") from None
        except json.JSONDecodeError as exc:
            raise InputError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
        if layout == "otava-json":
            return _otava_json(payload, path)
        return _perfherder_json(payload, path)
    frame = read_csv_text(path, require_rows=False)
    if layout == "candidates":
        return _candidates_csv(frame, path)
    if layout == "otava-csv":
        return _otava_csv(frame, path)
    return _perfherder_csv(frame, path)


def _detect(path: Path) -> str:
    if path.suffix.lower() == ".json":
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return "perfherder-json"  # the reader reports the exact problem
        if isinstance(payload, dict) and "results" in payload:
            return "perfherder-json"
        if isinstance(payload, list) and (not payload or isinstance(payload[0], dict) and "alerts" in payload[0]):
            return "perfherder-json"
        if isinstance(payload, dict) and "alerts" in payload:
            return "perfherder-json"
        return "otava-json"
    try:
        with open(path, encoding="utf-8") as fh:
            header = fh.readline()
    except UnicodeDecodeError:
        raise InputError(path, 1, "not a UTF-8 text file") from None
    columns = {c.strip().strip('"') for c in header.strip().split(",")}
    if not header.strip():
        raise InputError(path, None, "file is empty")
    if columns & set(_SIGNATURE_COLUMNS) and "revision" in columns:
        return "perfherder-csv"
    if "metric" in columns and columns & set(_OTAVA_FIELDS):
        return "otava-csv"
    if "series_id" in columns:
        return "candidates"
    raise InputError(
        path,
        1,
        f"cannot tell the candidate layout from the header ({header.strip()[:80]!r}); expected "
        "series_id + commit/index (triage candidates), an Otava report or a Perfherder alerts export",
    )


def _text(value: object) -> str | None:
    """A cell as stripped text; None for empty / NaN / None."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return None
    text = str(value).strip()
    return text if text and text.lower() not in ("nan", "none", "null") else None


def _index(value: object, path: Path, row: int) -> int | None:
    """A 0-based index cell; None when empty. Bad numbers are errors naming the row."""
    text = _text(value)
    if text is None:
        if isinstance(value, float) and np.isnan(value) or str(value).strip().lower() == "nan":
            raise InputError(path, row, "index is NaN")
        return None
    try:
        number = float(text)
    except ValueError:
        raise InputError(path, row, f"index {text!r} is not a number") from None
    if not np.isfinite(number):
        raise InputError(path, row, f"index {text!r} is not finite")
    if number != int(number):
        raise InputError(path, row, f"index {text!r} is not a whole number")
    return int(number)


def _candidates_csv(frame: pd.DataFrame, path: Path) -> CandidateTable:
    if "series_id" not in frame.columns:
        raise InputError(path, 1, f"missing column 'series_id' (found: {', '.join(frame.columns)})")
    if "commit" not in frame.columns and "index" not in frame.columns:
        raise InputError(path, 1, "need a 'commit' or an 'index' column to place each candidate")
    keys, commits, indices, rows = [], [], [], []
    for i, rec in enumerate(frame.to_dict("records")):
        row = i + 2
        sid = _text(rec.get("series_id"))
        if sid is None:
            raise InputError(path, row, "series_id is missing")
        commit = _text(rec.get("commit")) if "commit" in frame.columns else None
        index = _index(rec.get("index"), path, row) if "index" in frame.columns else None
        if commit is None and index is None:
            raise InputError(path, row, "neither commit nor index is given")
        keys.append((sid,))
        commits.append(commit)
        indices.append(index)
        rows.append(row)
    return CandidateTable(frame, keys, commits, indices, rows, "candidates", str(path))


def _otava_json(payload: object, path: Path) -> CandidateTable:
    if not isinstance(payload, dict):
        raise InputError(path, None, "expected Otava's JSON report: an object {test: [change point groups]}")
    records, keys, commits, indices, rows = [], [], [], [], []
    n = 0
    for test, groups in payload.items():
        if not isinstance(groups, list):
            raise InputError(path, None, f"test {test!r}: expected a list of change point groups")
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("changes"), list):
                raise InputError(path, n + 1, f"test {test!r}: a change point group without 'changes'")
            attributes = group.get("attributes") or {}
            for change in group["changes"]:
                n += 1
                if not isinstance(change, dict) or "metric" not in change:
                    raise InputError(path, n, f"test {test!r}: a change without 'metric'")
                metric = str(change["metric"])
                rec = {"test": test, "time": group.get("time"), **{f"attr_{k}": v for k, v in attributes.items()}}
                rec.update(change)
                records.append(rec)
                keys.append((metric, f"{test}.{metric}", f"{test}/{metric}"))
                commits.append(_text(attributes.get("commit")))
                indices.append(_index(change.get("index"), path, n))
                rows.append(n)
                if commits[-1] is None and indices[-1] is None:
                    raise InputError(path, n, "change has neither attributes.commit nor index")
    return CandidateTable(pd.DataFrame(records), keys, commits, indices, rows, "otava-json", str(path))


def _otava_csv(frame: pd.DataFrame, path: Path) -> CandidateTable:
    if "commit" not in frame.columns and "index" not in frame.columns:
        raise InputError(path, 1, "need a 'commit' or an 'index' column to place each change")
    keys, commits, indices, rows = [], [], [], []
    for i, rec in enumerate(frame.to_dict("records")):
        row = i + 2
        metric = _text(rec.get("metric"))
        if metric is None:
            raise InputError(path, row, "metric is missing")
        test = _text(rec.get("test"))
        keys.append((metric, f"{test}.{metric}", f"{test}/{metric}") if test else (metric,))
        commits.append(_text(rec.get("commit")))
        indices.append(_index(rec.get("index"), path, row) if "index" in frame.columns else None)
        rows.append(row)
        if commits[-1] is None and indices[-1] is None:
            raise InputError(path, row, "neither commit nor index is given")
    return CandidateTable(frame, keys, commits, indices, rows, "otava-csv", str(path))


def _signature_keys(sig: dict) -> tuple[str, ...]:
    keys = []
    for k in ("signature_hash", "id"):
        if _text(sig.get(k)) is not None:
            keys.append(str(sig[k]))
    suite, test, platform = (_text(sig.get(k)) or "" for k in ("suite", "test", "machine_platform"))
    name = " ".join(p for p in (suite, test) if p)
    if name and platform:
        keys.append(f"{name} {platform}")
    if name:
        keys.append(name)
    return tuple(keys)


def _perfherder_json(payload: object, path: Path) -> CandidateTable:
    if isinstance(payload, dict) and "results" in payload:
        summaries = payload["results"]
    elif isinstance(payload, dict) and "alerts" in payload:
        summaries = [payload]
    else:
        summaries = payload
    if not isinstance(summaries, list):
        raise InputError(path, None, "expected Perfherder alert summaries: {'results': [...]} or a list")
    records, keys, commits, rows = [], [], [], []
    n = 0
    for s in summaries:
        if not isinstance(s, dict) or not isinstance(s.get("alerts"), list):
            raise InputError(path, n + 1, "an alert summary without an 'alerts' list")
        revision = _text(s.get("revision"))
        for alert in s["alerts"]:
            n += 1
            if not isinstance(alert, dict):
                raise InputError(path, n, "an alert that is not an object")
            sig = alert.get("series_signature")
            if isinstance(sig, dict):
                sig_keys = _signature_keys(sig)
                flat_sig = {k: v for k, v in sig.items() if not isinstance(v, (dict, list))}
            elif _text(sig) is not None:
                sig_keys, flat_sig = (str(sig),), {"signature": sig}
            else:
                raise InputError(path, n, "alert has no series_signature")
            if revision is None:
                raise InputError(path, n, "alert summary has no revision")
            rec = {
                "summary_id": s.get("id"),
                "revision": revision,
                "prev_push_revision": s.get("prev_push_revision"),
                "push_timestamp": s.get("push_timestamp"),
                "summary_status": s.get("status"),
                "repository": s.get("repository"),
                "framework": s.get("framework"),
                "alert_id": alert.get("id"),
            }
            rec.update({k: v for k, v in alert.items() if k != "id" and not isinstance(v, (dict, list))})
            rec.update({f"signature_{k}" if not k.startswith("signature") else k: v for k, v in flat_sig.items()})
            records.append(rec)
            keys.append(sig_keys)
            commits.append(revision)
            rows.append(n)
    return CandidateTable(pd.DataFrame(records), keys, commits, [None] * n, rows, "perfherder-json", str(path))


def _perfherder_csv(frame: pd.DataFrame, path: Path) -> CandidateTable:
    sig_cols = [c for c in _SIGNATURE_COLUMNS if c in frame.columns]
    if not sig_cols or "revision" not in frame.columns:
        raise InputError(path, 1, f"a Perfherder export needs a signature column ({', '.join(_SIGNATURE_COLUMNS)}) and 'revision'")
    keys, commits, rows = [], [], []
    for i, rec in enumerate(frame.to_dict("records")):
        row = i + 2
        sig = {"signature_hash": rec.get("signature_hash") or rec.get("series_signature") or rec.get("signature"),
               "id": rec.get("signature_id"), "suite": rec.get("suite"), "test": rec.get("test"),
               "machine_platform": rec.get("machine_platform") or rec.get("platform")}
        k = _signature_keys(sig)
        if not k:
            raise InputError(path, row, "signature is missing")
        revision = _text(rec.get("revision"))
        if revision is None:
            raise InputError(path, row, "revision is missing")
        keys.append(k)
        commits.append(revision)
        rows.append(row)
    return CandidateTable(frame, keys, commits, [None] * len(frame), rows, "perfherder-csv", str(path))


# --------------------------------------------------------------------------- placing


def resolve(dataset: Dataset, table: CandidateTable) -> tuple[list[str], np.ndarray]:
    """The series id and 0-based index of every candidate, checked against ``dataset``.

    Raises :class:`InputError` naming the candidate file and row for an
    unknown series, a commit the series does not have, an index outside the
    series, or a commit and index that disagree.
    """
    series: list[str] = []
    index = np.empty(len(table), dtype=np.int64)
    where = f" of {dataset.source}" if dataset.source else ""
    for i, (keys, commit, idx, row) in enumerate(zip(table.keys, table.commits, table.indices, table.rows, strict=True)):
        sid = next((k for k in keys if k in dataset), None)
        if sid is None:
            tried = " / ".join(repr(k) for k in keys)
            raise InputError(table.source, row, f"unknown series {tried}: not a series{where} ({len(dataset)} series)")
        h = dataset[sid]
        if commit is not None:
            try:
                pos = h.index_of(commit)
            except KeyError:
                raise InputError(table.source, row, f"commit {commit!r} is not in series {sid!r}") from None
            if idx is not None and idx != pos and table.layout == "candidates":
                raise InputError(
                    table.source, row, f"index {idx} disagrees with commit {commit!r}, which is at index {pos} of {sid!r}"
                )
        else:
            if not 0 <= idx < len(h):
                raise InputError(table.source, row, f"index {idx} is outside series {sid!r} (0..{len(h) - 1})")
            pos = idx
        series.append(sid)
        index[i] = pos
    return series, index


# --------------------------------------------------------------------------- scoring


def threshold_for_recall(dataset: Dataset, classifier, recall: float) -> tuple[float, int]:
    """The highest threshold reaching ``recall`` on the triaged candidates of ``dataset``.

    Returns (threshold, number of triaged candidates used). Raises
    :class:`InputError` when ``dataset`` has no true and false alerts to
    measure recall on (see the module docstring for why and the caveat).
    """
    policy = TargetRecall(float(recall))
    if not 0.0 < policy.recall <= 1.0:
        raise InputError(None, None, f"target recall {recall} is outside (0, 1]")
    matrix = candidate_matrix(dataset, L.TRIAGED, window=model_window(classifier))
    y = matrix["label"].to_numpy() == L.TRUE_POSITIVE if len(matrix) else np.array([], dtype=bool)
    if len(matrix) == 0 or y.all() or not y.any():
        raise InputError(
            dataset.source,
            None,
            "--target-recall needs triaged candidates (both true_positive and false_positive labels) in --data "
            "to measure recall on; give --threshold instead",
        )
    proba = classifier.predict_proba(matrix[model_features(classifier)])[:, 1]
    return choose_threshold(policy, y.astype(np.int64), proba), int(len(y))


def score_candidates(
    dataset: Dataset,
    table: CandidateTable,
    classifier,
    *,
    threshold: float | None = None,
    explain_top: int = 3,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """P(true change) and a decision for every candidate of ``table``.

    Pre and After of each candidate are bounded by the confirmed change points
    (``true_positive`` labels) of its series in ``dataset``, with the model's
    window. Returns the detector's fields plus the columns of the module
    docstring, in input order. ``n_jobs``: processes for feature extraction.
    """
    series, index = resolve(dataset, table)
    wanted: dict[str, list[int]] = {}
    for sid, i in zip(series, index.tolist(), strict=True):
        wanted.setdefault(sid, []).append(i)
    # One extraction for all (unique) points, then rows back in input order.
    matrix = extract_features(dataset, candidates=wanted, window=model_window(classifier), n_jobs=n_jobs)
    where = pd.MultiIndex.from_arrays([matrix["series_id"].astype(str), matrix["index"].astype(np.int64)])
    matrix = matrix.iloc[where.get_indexer(pd.MultiIndex.from_arrays([series, index]))].reset_index(drop=True)
    decided = decide(classifier, matrix, threshold=threshold, explain_top=explain_top)
    out = table.fields.reset_index(drop=True).copy()
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
    return out
