"""Reading the candidate files of any detector, and placing each candidate in a dataset.

A statistical detector (ours, Apache Otava, Mozilla Perfherder) flags
commits; :func:`read_candidates` reads its output into a
:class:`CandidateTable` (the detector's own fields plus, per candidate, the
series ids to try, the commit and/or the index) and :func:`resolve` places
each candidate at a (series, 0-based index) of a dataset.
:mod:`triage.scoring` scores them, :mod:`triage.report` draws them.

Layouts (:func:`read_candidates`; detected by :func:`triage.sniffing.candidate_layout`)
-----------------------------------------------------------------------------------
candidates CSV
    What ``triage candidates`` writes: ``series_id, commit, index, detector,
    score`` then detector fields. ``series_id`` is required, with ``commit``
    or ``index`` (0-based position in the series); with both they must agree.
candidates JSON lines
    The same fields, one JSON object a line (``triage candidates --format
    json``); told apart by a first line that is a whole object naming
    ``series_id``, whatever the file's suffix.
Otava JSON report
    ``otava analyze --output json``: ``{test: [{"time", "attributes":
    {"commit", ...}, "changes": [{"metric", "index", "forward_change_percent",
    "magnitude", "mean_before", "stddev_before", "mean_after",
    "stddev_after", "pvalue"}, ...]}, ...]}``. One candidate per change; the
    series is the metric (how :func:`triage.loaders.read_otava_csv` names a
    metric column; ``metric@branch`` when the change's attributes name its
    branch), else ``test.metric``; the commit is
    ``attributes.commit`` (or the first attribute named like a commit id,
    ``git_sha``, ``revision``, ...: the config reader's rule), else the
    change's ``index``, else the group's ``time`` (epoch seconds or a date),
    matched with the series' timestamps: a CSV without a commit column is
    keyed by time, in Otava and here. A report of several tests printed as one
    object per test, one after another, is read whole. Otava (and Hunter
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
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import timestamps
from triage.core.csv_lines import csv_record_lines
from triage.core.errors import InputError
from triage.core.history import Dataset
from triage.core.json_input import RepeatedKey, _no_repeated_keys, overlong_integer, read_json
from triage.core.values import locale_number
from triage.loaders import read_csv_text
from triage.readers.otava import COMMIT_ATTRIBUTES
from triage.sniffing import SIGNATURE_COLUMNS, candidate_layout, csv_delimiter, starts_like_json

#: Input layouts :func:`read_candidates` knows.
LAYOUTS: tuple[str, ...] = (
    "auto", "candidates", "candidates-json", "otava-json", "otava-csv", "perfherder-json", "perfherder-csv",
)


#: The registry detector a candidate layout comes from, where the layout says so.
LAYOUT_DETECTORS: dict[str, str] = {
    "perfherder-json": "perfherder",
    "perfherder-csv": "perfherder",
    "otava-json": "edivisive",
    "otava-csv": "edivisive",
}


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
    times : per row, the time (ns since the epoch, UTC) that places a candidate with neither a commit nor
        an index (an Otava change whose attributes name no commit); None: no row has one
    """

    fields: pd.DataFrame
    keys: Sequence[tuple[str, ...]]
    commits: Sequence[str | None]
    indices: Sequence[int | None]
    rows: Sequence[int]
    layout: str
    source: str
    times: Sequence[int | None] | None = None

    def __len__(self) -> int:
        return len(self.fields)

    def detectors(self) -> list[str]:
        """The detectors whose candidates these are: the ``detector`` column's names, else the layout's.

        A Perfherder alerts export holds Perfherder's t-test alerts and an
        Otava report E-Divisive's change points (``perfherder`` /
        ``edivisive`` in :mod:`triage.detectors`); a file of another layout
        without a ``detector`` column names none.
        """
        if "detector" in self.fields.columns:
            return [d for d in self.fields["detector"].dropna().astype(str).str.strip().unique() if d]
        return [LAYOUT_DETECTORS[self.layout]] if self.layout in LAYOUT_DETECTORS else []


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
    if layout in ("auto", "candidates", "candidates-json") and is_blank(path):
        # JSON lines of no candidate: what `triage candidates --format json` writes when the
        # detector finds nothing (a CSV says so with its header alone).
        return CandidateTable(pd.DataFrame(columns=["series_id", "commit", "index"]), [], [], [], [], "candidates",
                              str(path))
    payload: object = None
    if layout == "auto":
        if _starts_with_a_candidate_object(path):
            layout = "candidates-json"
        elif starts_like_json(path):
            # By content, whatever the name: standard input, alerts.gz, a .txt download, a BOM.
            payload = _read_json(path)
            layout = _json_layout(payload)
        else:
            layout = candidate_layout(path)
    if layout == "candidates-json":
        return _refuse_repeats(_candidates_csv(*json_lines_table(path)))
    if layout.endswith("json"):
        payload = _read_json(path) if payload is None else payload
        if layout == "otava-json":
            return _refuse_repeats(_otava_json(payload, path))
        return _perfherder_json(payload, path)
    if starts_like_json(path):
        # A CSV layout named for a JSON file: the CSV reader's "needs a signature column and
        # 'revision'" named columns the file has (in JSON) and not the layout at fault.
        json_twin = {"perfherder-csv": "perfherder-json", "otava-csv": "otava-json", "candidates": "candidates-json"}
        raise InputError(path, None, f"is JSON, not a CSV as --layout {layout} reads: give --layout "
                         f"{json_twin.get(layout, 'auto')} (or auto)")
    # Separated by , ; tab or | as a data CSV may be (the header tells which).
    sep = csv_delimiter(path)
    frame = read_csv_text(path, sep=sep, require_rows=False)
    # Each row's line in the file: pandas skips blank lines, which row numbers must count.
    numbers = [int(n) for n in csv_record_lines(path, len(frame), sep)]
    if layout == "candidates":
        return _refuse_repeats(_candidates_csv(frame, path, numbers))
    if layout == "otava-csv":
        return _refuse_repeats(_otava_csv(frame, path, numbers))
    return _perfherder_csv(frame, path, numbers)


def _read_json(path: Path) -> object:
    """:func:`read_json`, with an integer of more digits than Python converts (a ValueError it lets
    through, an internal error) refused at its line.

    Several JSON objects one after another (Otava's report of several tests:
    it prints one ``{test: [...]}`` object per test) are read as one object
    holding every test (a test in two of them: its groups in order).
    """
    try:
        return read_json(path)
    except InputError as exc:
        if "Extra data" not in exc.problem:
            raise
        every = _json_documents(path)
        documents = [d for d in every if isinstance(d, dict) and not {"results", "alerts"} & d.keys()]
        if len(documents) < len(every):
            raise  # not Otava's tests one after another: the first error says where the first document ends
        merged: dict = {}
        for document in documents:
            for test, groups in document.items():
                if isinstance(merged.get(test), list) and isinstance(groups, list):
                    merged[test] = merged[test] + groups
                else:
                    merged[test] = groups
        return merged
    except ValueError:
        raise overlong_integer(path, path.read_text(encoding="utf-8-sig")) from None


def _json_documents(path: Path) -> list[object]:
    """Every JSON document of a file that holds several, one after another (blanks between them)."""
    text = path.read_text(encoding="utf-8-sig")
    decoder = json.JSONDecoder(object_pairs_hook=_no_repeated_keys)
    documents: list[object] = []
    at = 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        try:
            document, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            cut = ": the file ends before it is complete (truncated?)" if not text[exc.pos:].strip() else ""
            raise InputError(path, exc.lineno, f"not valid JSON: {exc.msg} (line {exc.lineno}, column "
                             f"{exc.colno}), in JSON document {len(documents) + 1} of the file{cut}") from None
        except RepeatedKey as exc:
            raise InputError(path, None, f"not usable JSON: {exc}") from None
        except RecursionError:
            raise InputError(path, None, "JSON nested too deeply") from None
        documents.append(document)
    return documents



def _json_layout(payload: object) -> str:
    """A JSON candidate file's layout by its content (the rule of :func:`triage.sniffing.candidate_layout`)."""
    if isinstance(payload, dict) and ("results" in payload or "alerts" in payload):
        return "perfherder-json"
    if isinstance(payload, list) and (not payload or isinstance(payload[0], dict) and "alerts" in payload[0]):
        return "perfherder-json"
    return "otava-json"


def is_blank(path: Path) -> bool:
    """True when the file holds nothing but whitespace (read in chunks: a large file stops at its first byte)."""
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 16):
            if chunk.strip():
                return False
    return True


def _starts_with_a_candidate_object(path: Path) -> bool:
    """True when the first non-blank line is a whole JSON object with ``series_id`` (JSON lines)."""
    with open(path, "rb") as fh:
        first = next((line for line in fh if line.strip()), b"")
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):  # not JSON, a document spread over lines (Otava, Perfherder), too deep
        return False
    return isinstance(record, dict) and "series_id" in record


def json_lines_table(path: Path) -> tuple[pd.DataFrame, Path, list[int]]:
    """One JSON object a line as a table of text cells, as a CSV is read (None: an empty cell);
    the path and each record's line number (blank lines are skipped). The one JSON-lines reader of
    the candidate and decision files (a byte-order mark is read past)."""
    records, numbers = [], []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark, then perhaps a blank line
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except UnicodeDecodeError:
                raise InputError(path, number, "not UTF-8 text") from None
            except ValueError as exc:
                raise InputError(path, number, f"not a JSON object: {getattr(exc, 'msg', exc)}") from None
            except RecursionError:
                raise InputError(path, number, "not a record: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise InputError(path, number, "expected a JSON object with series_id and commit or index")
            records.append({k: "" if v is None else str(v) for k, v in record.items()})
            numbers.append(number)
    return pd.DataFrame(records).fillna(""), path, numbers


def _text(value: object) -> str | None:
    """A cell as stripped text; None for empty / NaN / None."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return None
    text = str(value).strip()
    return text if text and text.lower() not in ("nan", "none", "null") else None


def _name(value: object) -> str | None:
    """A series id, metric, test or commit cell as stripped text; None only when empty (or a JSON null).

    Unlike :func:`_text`, the words ``NaN``, ``None`` and ``null`` are names here: the data
    readers keep a series or commit so named (every cell is text), and a candidate of it was
    refused as "series_id is missing" or placed by its index alone.
    """
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return None
    text = str(value).strip()
    return text or None


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


def _check_scores(frame: pd.DataFrame, path: Path, numbers: list[int]) -> None:
    """A detector's ``score`` cells: empty (no score) or a finite number.

    The scores are ranked among the file's and the rank is a model feature
    (:func:`triage.scoring.detector_score_rank`): text would silently become
    "missing" and an infinity the top rank.
    """
    for row, text in zip(numbers, frame["score"].astype(str).str.strip(), strict=True):
        if not text:
            continue
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            locale = locale_number(text)  # the same advice as for a history's values
            raise InputError(path, row, locale.replace("value ", "score ", 1) if locale
                             else f"score {text!r} is not a finite number")


def _candidates_csv(frame: pd.DataFrame, path: Path, numbers: list[int] | None = None) -> CandidateTable:
    """``numbers``: each row's line in the file (default: a CSV's, the header being line 1)."""
    numbers = list(range(2, len(frame) + 2)) if numbers is None else numbers
    if "series_id" not in frame.columns:
        raise InputError(path, 1, f"missing column 'series_id' (found: {', '.join(frame.columns)})")
    if "commit" not in frame.columns and "index" not in frame.columns:
        raise InputError(path, 1, "need a 'commit' or an 'index' column to place each candidate")
    if "score" in frame.columns:
        _check_scores(frame, path, numbers)
    keys, commits, indices, rows = [], [], [], []
    for row, rec in zip(numbers, frame.to_dict("records"), strict=True):
        sid = _name(rec.get("series_id"))
        if sid is None:
            raise InputError(path, row, "series_id is missing")
        commit = _name(rec.get("commit")) if "commit" in frame.columns else None
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
    times: list[int | None] = []
    n = 0
    for test, groups in payload.items():
        if not isinstance(groups, list):
            raise InputError(path, None, f"test {test!r}: expected a list of change point groups")
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("changes"), list):
                raise InputError(path, n + 1, f"test {test!r}: a change point group without 'changes'")
            attributes = group.get("attributes") or {}
            if not isinstance(attributes, dict):
                raise InputError(path, n + 1, f"test {test!r}: a change point group whose 'attributes' is "
                                 f"{json.dumps(attributes)[:40]}, not an object of commit, branch, ...")
            for change in group["changes"]:
                n += 1
                if not isinstance(change, dict) or "metric" not in change:
                    raise InputError(path, n, f"test {test!r}: a change without 'metric'")
                metric = str(change["metric"])
                rec = {"test": test, "time": group.get("time"), **{f"attr_{k}": v for k, v in attributes.items()}}
                rec.update(change)
                records.append(rec)
                keys.append(_with_branch((metric, f"{test}.{metric}", f"{test}/{metric}"), attributes.get("branch")))
                commits.append(_otava_commit(attributes))
                indices.append(_index(change.get("index"), path, n))
                rows.append(n)
                times.append(None)
                if commits[-1] is None and indices[-1] is None:
                    # No commit attribute: the CSV had none either, and its rows are keyed by their time.
                    times[-1] = _otava_time(group.get("time"), path, n)
    return CandidateTable(pd.DataFrame(records), keys, commits, indices, rows, "otava-json", str(path),
                          times if any(t is not None for t in times) else None)


def _otava_commit(attributes: dict) -> str | None:
    """An Otava change's commit id: its first attribute named like one, as the config reader takes it
    (:data:`triage.readers.otava.COMMIT_ATTRIBUTES`); None when no attribute is."""
    named = next((k for k in attributes if str(k).lower() in COMMIT_ATTRIBUTES), None)
    return None if named is None else _name(attributes[named])


def _otava_time(value: object, path: Path, row: int) -> int:
    """A change point group's ``time`` (epoch seconds or a date) in ns, to place a change with no commit by it."""
    if value is None or isinstance(value, dict | list):
        raise InputError(path, row, "change has neither a commit attribute, an index nor a time")
    try:
        ns = timestamps.to_ns(value)
    except ValueError as exc:
        raise InputError(path, row, f"change has no commit attribute nor index, and its time: {exc}") from None
    if ns is None:
        raise InputError(path, row, "change has neither a commit attribute, an index nor a time")
    return ns


def _otava_csv(frame: pd.DataFrame, path: Path, numbers: list[int]) -> CandidateTable:
    if "commit" not in frame.columns and "index" not in frame.columns:
        raise InputError(path, 1, "need a 'commit' or an 'index' column to place each change")
    keys, commits, indices, rows = [], [], [], []
    for row, rec in zip(numbers, frame.to_dict("records"), strict=True):
        metric = _name(rec.get("metric"))
        if metric is None:
            raise InputError(path, row, "metric is missing")
        test = _name(rec.get("test"))
        keys.append(_with_branch((metric, f"{test}.{metric}", f"{test}/{metric}") if test else (metric,),
                                 rec.get("branch")))
        commits.append(_name(rec.get("commit")))
        indices.append(_index(rec.get("index"), path, row) if "index" in frame.columns else None)
        rows.append(row)
        if commits[-1] is None and indices[-1] is None:
            raise InputError(path, row, "neither commit nor index is given")
    return CandidateTable(frame, keys, commits, indices, rows, "otava-csv", str(path))


def _with_branch(keys: tuple[str, ...], branch: object) -> tuple[str, ...]:
    """``keys`` and, for a change on a branch, each as ``<key>@<branch>``: how the Otava CSV reader
    names a metric of a file with a branch column (:func:`triage.loaders.read_otava_csv`)."""
    name = _text(branch)
    # The branch's series first: where the metric's own series (rows with no branch) is there
    # too, the plain key would win and place the change in the wrong series.
    return tuple(f"{k}@{name}" for k in keys) + keys if name else keys


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
        revision = _name(s.get("revision"))
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
    return CandidateTable(_t_as_score(pd.DataFrame(records)), keys, commits, [None] * n, rows, "perfherder-json",
                          str(path))


def _t_as_score(fields: pd.DataFrame) -> pd.DataFrame:
    """A Perfherder export's ``t_value`` as the ``score`` column (capped as Perfherder stores it), when it has none.

    The model ranks a file's candidates by their detector's score
    (:func:`triage.scoring.detector_score_rank`); `triage candidates
    --detector perfherder` writes t there, an export carries it as
    ``t_value``, which was ignored: the same alerts got other P(true) and 4 of
    40 calls flipped between the two files.
    """
    if "score" in fields.columns or "t_value" not in fields.columns:
        return fields
    from triage.detectors.windowed import T_CAP

    t = pd.to_numeric(fields["t_value"], errors="coerce").clip(upper=T_CAP)
    return fields.assign(score=t)


def _perfherder_csv(frame: pd.DataFrame, path: Path, numbers: list[int]) -> CandidateTable:
    sig_cols = [c for c in SIGNATURE_COLUMNS if c in frame.columns]
    if not sig_cols or "revision" not in frame.columns:
        raise InputError(path, 1, f"a Perfherder export needs a signature column ({', '.join(SIGNATURE_COLUMNS)}) and 'revision'")
    keys, commits, rows = [], [], []
    for row, rec in zip(numbers, frame.to_dict("records"), strict=True):
        sig = {"signature_hash": rec.get("signature_hash") or rec.get("series_signature") or rec.get("signature"),
               "id": rec.get("signature_id"), "suite": rec.get("suite"), "test": rec.get("test"),
               "machine_platform": rec.get("machine_platform") or rec.get("platform")}
        k = _signature_keys(sig)
        if not k:
            raise InputError(path, row, "signature is missing")
        revision = _name(rec.get("revision"))
        if revision is None:
            raise InputError(path, row, "revision is missing")
        keys.append(k)
        commits.append(revision)
        rows.append(row)
    return CandidateTable(_t_as_score(frame), keys, commits, [None] * len(frame), rows, "perfherder-csv", str(path))


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
    times = table.times if table.times is not None else [None] * len(table)
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
                folded = str(commit).casefold()
                alike = next((str(c) for c in h.commits if str(c).casefold() == folded), None)
                hint = f" (it has {alike!r}, which differs only in case)" if alike is not None else ""
                raise InputError(table.source, row, f"commit {commit!r} is not in series {sid!r}{hint}") from None
            if idx is not None and idx != pos and table.layout == "candidates":
                raise InputError(
                    table.source, row, f"index {idx} disagrees with commit {commit!r}, which is at index {pos} of {sid!r}"
                    " (candidates found with --commit-order: give the same file here too)"
                )
        elif idx is None and (time := times[i]) is not None:
            pos = _position_of_time(h, time, table.source, row)
        else:
            if idx is None:  # every reader gives a commit or an index; a hand-built table may not
                raise InputError(table.source, row, f"a candidate of {sid!r} with neither a commit nor an index")
            if not 0 <= idx < len(h):
                raise InputError(table.source, row, f"index {idx} is outside series {sid!r} (0..{len(h) - 1})")
            pos = idx
        series.append(sid)
        index[i] = pos
    return series, index


def _position_of_time(h, ns: int, source: str, row: int) -> int:
    """The index of the commit of ``h`` measured at ``ns``: how a change without a commit is placed."""
    shown = pd.Timestamp(ns, unit="ns", tz="UTC").isoformat()
    if h.timestamps is None:
        raise InputError(source, row, f"the change has no commit, only its time {shown}, and series "
                         f"{h.series_id!r} has no timestamps to find it by")
    at = np.flatnonzero(h.timestamps.astype("datetime64[ns]").astype(np.int64) == ns)
    if len(at) != 1:
        what = "no commit" if not len(at) else f"{len(at)} commits"
        raise InputError(source, row, f"the change has no commit, only its time {shown}, and series "
                         f"{h.series_id!r} has {what} at that time")
    return int(at[0])


def _refuse_repeats(table: CandidateTable) -> CandidateTable:
    """A detector's file flags a commit once: a repeated row would be scored against itself.

    (It also shifts ``det_score_rank``, the rank among the file's rows.) Perfherder
    exports are exempt (a reassigned alert is listed in two summaries), and so are
    points given in code (:meth:`CandidateTable.from_points`), which may repeat.
    """
    first: dict[tuple, int] = {}
    times = table.times if table.times is not None else [None] * len(table)
    for keys, commit, idx, row, time in zip(table.keys, table.commits, table.indices, table.rows, times, strict=True):
        key = (keys, commit, idx, time)
        if key in first:
            where = (f"commit {commit!r}" if commit is not None else f"index {idx}" if idx is not None
                     else f"time {pd.Timestamp(time, unit='ns', tz='UTC').isoformat()}")
            raise InputError(table.source, row, f"repeats the candidate of row {first[key]} "
                             f"(series {keys[0]!r}, {where}); each commit is a candidate once")
        first[key] = row
    return table
