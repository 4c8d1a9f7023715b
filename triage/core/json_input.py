"""Reading a JSON input file: the one place its failures become :class:`InputError`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from triage.core.errors import InputError


class RepeatedKey(ValueError):
    """A JSON object naming one key twice: which value was meant cannot be told."""


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    # json keeps the last of repeated keys without a word ({"value": 1, "value": 2} read as 2),
    # where a CSV header naming a column twice is refused
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise RepeatedKey(f"key {key!r} is given twice in one object")
        out[key] = value
    return out


def read_json(path: str | Path, what: str = "JSON") -> object:
    """The parsed content of ``path``.

    Every way a file can fail to be JSON (missing, a directory, not UTF-8,
    malformed, nested past Python's recursion limit) is an :class:`InputError`
    naming the file and, for malformed JSON, the line. ``what`` names the
    expected content in the messages (e.g. ``"JMH JSON results"``).
    """
    path = Path(path)
    try:
        # utf-8-sig: Windows tools (PowerShell's Out-File, Notepad) start UTF-8 with a BOM
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, None, f"is a directory, expected {what}") from None
    except UnicodeDecodeError:
        raise InputError(path, None, f"not a UTF-8 text file ({what} must be UTF-8)") from None
    if not text.strip():
        raise InputError(path, None, f"file is empty, expected {what}")
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_keys)
    except json.JSONDecodeError as exc:
        prefix = "not valid JSON" if what == "JSON" else f"not {what}: not valid JSON"
        # "Expecting ',' delimiter (line 1, column 5535)" at the last byte of a file cut short (a
        # killed run, a full disk, a partial copy) sent the user looking for a comma.
        cut = ": the file ends before the JSON is complete (truncated?)" if _ends_early(text, exc) else ""
        # exc.msg alone ended mid-phrase ("Unterminated string starting at"), and JMH writes a file
        # on one long line: the column says where; "line" says what the row counts here.
        raise InputError(
            path, exc.lineno, f"{prefix}: {exc.msg} (line {exc.lineno}, column {exc.colno}){cut}"
        ) from None
    except RepeatedKey as exc:
        raise InputError(path, None, f"not usable {what}: {exc}") from None
    except ValueError:  # an integer of more digits than Python converts
        raise overlong_integer(path, text) from None
    except RecursionError:
        raise InputError(path, None, f"JSON nested too deeply to be {what}") from None


def _ends_early(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether ``exc`` is the decoder running out of ``text``: its position at the end (or only
    whitespace after it), or a string never closed (the decoder names where that string began)."""
    return not text[exc.pos:].strip() or exc.msg.startswith("Unterminated string")


def json_record(line: str) -> dict:
    """One result of a JSON-lines feed (``triage watch``'s input, a file ``load`` reads): the parsed object.

    ``series`` (the name older outputs used) becomes ``series_id``; both,
    naming different series, are refused. Raises
    ``ValueError`` whose message is the problem, for the caller to put the
    file and the line to: not JSON, not an object, a key missing.
    """
    try:
        record = json.loads(line, object_pairs_hook=_no_repeated_keys)
    except RepeatedKey as exc:
        raise ValueError(f"not a usable JSON object: {exc}") from None
    except json.JSONDecodeError as exc:
        # exc.msg alone ended mid-phrase ("Unterminated string starting at"): the column says where
        raise ValueError(f"not a JSON object: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ValueError(f"not a usable JSON object: {exc}") from None
    except RecursionError:
        raise ValueError("not a usable JSON object: nested too deeply") from None
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object with series_id, commit, value")
    if "series" in record:
        if "series_id" not in record:
            record["series_id"] = record.pop("series")
        elif record["series"] != record["series_id"]:
            # which one was meant cannot be told; decided under either, the other series lost a commit
            raise ValueError(f"both series_id {record['series_id']!r} and series {record['series']!r} (the older "
                             "name of the same key): give one")
        else:
            del record["series"]
    missing = [k for k in ("series_id", "commit", "value") if k not in record]
    if missing:
        raise ValueError(f"missing key(s) {', '.join(missing)}")
    return record


def overlong_integer(path: str | Path, text: str) -> InputError:
    """The error for JSON ``text`` that Python refuses to parse for an integer of more digits than it
    converts (``sys.get_int_max_str_digits()``, 4300): a ValueError that no reader's JSON error handling
    caught, an internal error. Names the line of the first such integer."""
    limit = sys.get_int_max_str_digits() or 4300
    found = re.search(rf"\d{{{limit + 1},}}", text)
    line = text.count("\n", 0, found.start()) + 1 if found else None
    digits = f" of {len(found.group())} digits" if found else ""
    return InputError(path, line, f"a number{digits}: no measurement has so many; a damaged file?")
