"""Mozilla Perfherder's performance-data JSON, labelled from an alerts export.

Performance data (``/api/project/<repo>/performance/data/?signature_id=...``)::

    {"<signature>": [{"signature_id": 4, "revision": "<sha>", "push_id": 9,
                      "push_timestamp": "2024-01-02T03:04:05", "value": 12.5, ...}, ...]}

or a plain list of such points (series named by ``signature_id``). One
series per signature; several points of one revision (retriggers) are
aggregated; points keep their order, so a revision keeps its first place.

Alerts (``/api/performance/alertsummary/``, the same export ``triage score``
reads) give the labels: each alert's ``status`` (the API's integer or its
name, mapped by :mod:`triage.core.labels`, e.g. 3 = invalid -> false
positive) is put on its revision in the series whose signature (hash or id)
the alert names; ``series_signature.lower_is_better`` gives the direction.
An alert on a revision or signature the data lacks is an error naming it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.errors import InputError
from triage.core.history import Dataset, Trim, dataset_from_long
from triage.core.json_input import read_json
from triage.readers.source import display_name, plain_file

POINT_FIELDS = ("revision", "value")


def is_perfherder_data(payload: object) -> bool:
    """Performance data: a mapping of point lists, or a list of points, with revision and value."""
    def point(x: object) -> bool:
        return isinstance(x, dict) and all(k in x for k in POINT_FIELDS)

    if isinstance(payload, dict):
        return bool(payload) and all(isinstance(v, list) and (not v or point(v[0])) for v in payload.values())
    return isinstance(payload, list) and bool(payload) and point(payload[0])


def read_perfherder_data(
    path: str | Path,
    *,
    alerts: str | Path | None = None,
    aggregate: str = "mean",
    sort_timestamps: bool = False,
    trim: Trim = None,
) -> Dataset:
    """Read performance data, optionally labelled by an alerts export (see the module docstring)."""
    path = Path(path)
    payload = read_json(path)
    if not is_perfherder_data(payload):
        raise InputError(path, None, "not Perfherder performance data (expected {signature: [{revision, value, ...}]})")
    groups: list[tuple[str | None, list]] = (
        list(payload.items()) if isinstance(payload, dict) else [(None, payload)]  # type: ignore[list-item]
    )
    records = []
    for key, points in groups:
        if not points:
            # The API returns an empty list for a signature without data in the
            # interval asked for: nothing to read, and the other series still are.
            warnings.warn(f"{display_name(path)}: signature {key!r} has no data points; skipped", stacklevel=2)
            continue
        for number, p in enumerate(points, start=1):
            if not isinstance(p, dict) or "revision" not in p or "value" not in p:
                raise InputError(path, number, f"point {number} of {key or 'the list'!r}: needs revision and value")
            sid = key if key is not None else p.get("signature_id", p.get("signature_hash"))
            if sid is None:
                raise InputError(path, number, "point without signature_id (a plain list needs it)")
            where = f"point {number} of {'the list' if key is None else f'signature {key!r}'}"
            if p["value"] is None:  # pandas would call it 'nan', which the file does not say
                raise InputError(path, number, f"value is null, not a number ({where})")
            records.append({"series_id": str(sid), "commit": p["revision"], "timestamp": p.get("push_timestamp", ""),
                            "value": p["value"], "_sig_id": p.get("signature_id"), "_where": where, "_point": number})
    if not records:  # else the frame below has no columns and fails as an internal error
        raise InputError(path, None, "no data points in any signature")
    frame = pd.DataFrame.from_records(records)
    sig_ids, where, points = frame.pop("_sig_id"), frame.pop("_where"), frame.pop("_point")
    higher: dict[str, bool | None] = {}
    if alerts is not None:
        frame["label"] = ""
        # Compressed (gzip / zstd, by its first bytes) or standard input, as every input may be;
        # errors name the file as given.
        with plain_file(alerts, directory_ok=False) as plain:
            _apply_alerts(frame, sig_ids, plain, higher)
    try:
        return dataset_from_long(frame, None, path, aggregate=aggregate, sort_timestamps=sort_timestamps,
                                 higher_is_better=higher, trim=trim)
    except InputError as exc:
        # The row is the point's number in its signature's list (as before); a file of several
        # signatures has a point of that number in each, so the signature is named too.
        if exc.row is None or not 1 <= exc.row <= len(frame):
            raise
        k = exc.row - 1
        raise InputError(path, int(points.iloc[k]), f"{exc.problem} ({where.iloc[k]})") from None


def _apply_alerts(frame: pd.DataFrame, sig_ids: pd.Series, path: Path, higher: dict[str, bool | None]) -> None:
    summaries = _summaries(read_json(path), path)
    # A signature may be named by its hash (the data's key) or its numeric id.
    by_id = {str(i): s for i, s in zip(sig_ids, frame["series_id"], strict=True) if i is not None and i == i}
    known = set(frame["series_id"])
    # Each (series, revision)'s rows, found once: a scan of the whole frame per alert made an
    # export of 4,000 alerts on 1 M points take a minute (O(alerts x points)).
    # Only the rows of a revision some summary names are indexed (not a key per point of the data).
    revisions = {r for r in (x.get("revision") if isinstance(x, dict) else None for x in summaries)
                 if isinstance(r, str | int | float)}
    named = np.flatnonzero(frame["commit"].isin(revisions).to_numpy())
    rows_of: dict[tuple[object, object], list[int]] = {}
    for k, key in zip(named.tolist(), zip(frame["series_id"].to_numpy()[named].tolist(),
                                          frame["commit"].to_numpy()[named].tolist(), strict=True), strict=True):
        rows_of.setdefault(key, []).append(k)
    label_of = frame["label"].to_numpy(dtype=object, copy=True)
    for number, summary in enumerate(summaries, start=1):
        revision = summary.get("revision") if isinstance(summary, dict) else None
        if not revision:
            raise InputError(path, number, f"alert summary {number} has no revision")
        for alert in _alerts_of(summary, number, path):
            sig = alert.get("series_signature") or {}
            if not isinstance(sig, dict):
                raise InputError(path, number, f"alert summary {number}: series_signature {sig!r} is not an object")
            sid = next((s for s in (sig.get("signature_hash"), sig.get("id"), alert.get("signature_id")) if
                        s is not None and (str(s) in known or str(s) in by_id)), None)
            if sid is None:
                raise InputError(path, number, f"alert on revision {revision!r}: its signature is not in the data")
            series = str(sid) if str(sid) in known else by_id[str(sid)]
            try:
                label = labels.normalise_label(alert.get("status", summary.get("status")))
            except KeyError:
                raise InputError(path, number, f"unknown alert status {alert.get('status')!r} "
                                 f"(known: {labels.known_labels()})") from None
            try:
                where = rows_of.get((series, revision))
            except TypeError:  # a revision that is no JSON scalar
                where = None
            if not where:
                raise InputError(path, number, f"alert on revision {revision!r} of {series!r}: the data has no such "
                                 f"revision{_case_hint(frame, series, revision)}")
            label_of[where] = label
            if "lower_is_better" in sig:
                higher[series] = not bool(sig["lower_is_better"])
    frame["label"] = label_of


def _case_hint(frame: pd.DataFrame, series: str, revision: object) -> str:
    """`` (it has '3f2a9c1', ...)`` when the series has the revision in another case (a hand-edited export), else ""."""
    if not isinstance(revision, str):
        return ""
    commits = frame.loc[frame["series_id"] == series, "commit"].astype(str)
    alike = sorted(set(commits[commits.str.lower() == revision.lower()]))
    if not alike:
        return ""
    return f" (it has {alike[0]!r}, which differs only in case: write the revision as the data does)"


def _summaries(payload: object, path: Path) -> list:
    """The alert summaries of an export: ``{results: [...]}``, a bare list, or one summary ``{alerts: [...]}``."""
    if isinstance(payload, dict) and "alerts" in payload and "results" not in payload:
        return [payload]
    summaries = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(summaries, list):
        raise InputError(path, None, "expected Perfherder alert summaries ({results: [{revision, alerts}]})")
    return summaries


def _alerts_of(summary: dict, number: int, path: Path) -> list[dict]:
    """A summary's alerts, each an object.

    A summary without an alerts list labels nothing; skipping it would hide
    that the export is not what was meant (or was cut), so it is an error.
    """
    if "alerts" not in summary:
        raise InputError(path, number, f"alert summary {number} has no 'alerts' list")
    alerts = summary["alerts"]
    if not isinstance(alerts, list):
        raise InputError(path, number, f"alert summary {number}: 'alerts' is {type(alerts).__name__}, not a list")
    for k, alert in enumerate(alerts, start=1):
        if not isinstance(alert, dict):
            raise InputError(path, number, f"alert summary {number}, alert {k}: {alert!r} is not an object")
    return alerts
