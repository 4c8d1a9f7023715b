"""The UBJSON reader behind compiled XGBoost models: XGBoost's own output, every marker, broken input."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from helpers_training import make_matrix

from triage.training import ubjson
from triage.training.classifier import TriageClassifier
from triage.training.compiled import flatten_xgboost


def _key(name: str) -> bytes:
    return b"U" + bytes([len(name)]) + name.encode()


def _plain(value: object) -> object:
    """``value`` with numpy arrays as lists of Python numbers, to compare with what ``json`` gives."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _close(a: object, b: object) -> bool:
    """Equal, floats compared as float32 (JSON prints XGBoost's float32 values to 9 digits)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return bool(np.float32(a) == np.float32(b)) or (np.isnan(a) and np.isnan(b))  # type: ignore[arg-type]
    return a == b


def test_xgboosts_ubjson_reads_as_its_json_and_flattens_the_same() -> None:
    matrix = make_matrix(120, 4, seed=3)
    clf = TriageClassifier(model="xgb", n_estimators=30, max_depth=4).fit(matrix)
    booster = clf.estimator_.get_booster()
    read = ubjson.loads(bytes(booster.save_raw(raw_format="ubj")))
    assert _close(json.loads(booster.save_raw(raw_format="json")), _plain(read))
    trees = read["learner"]["gradient_booster"]["model"]["trees"]  # type: ignore[index]
    assert len(trees) == 30 and trees[0]["split_conditions"].dtype == np.dtype(">f4")
    flat, base = flatten_xgboost(booster)
    assert flat.left.size == sum(t["left_children"].size for t in trees)
    assert np.isfinite(base)


def test_every_marker_of_the_specification() -> None:
    data = (
        b"{"
        + _key("int8") + b"i\xff"
        + _key("uint8") + b"U\xff"
        + _key("int16") + b"I" + struct.pack(">h", -300)
        + _key("int32") + b"l" + struct.pack(">i", 70000)
        + _key("int64") + b"L" + struct.pack(">q", -(2**40))
        + _key("f32") + b"d" + struct.pack(">f", 0.5)
        + _key("f64") + b"D" + struct.pack(">d", 1e300)
        + _key("text") + b"SU\x06" + "héllo".encode()
        + _key("big") + b"HU\x03" + b"1e5"
        + _key("char") + b"Cx"
        + _key("flags") + b"[TFNZN]"  # N: no-op padding
        + b"N"
        + _key("typed") + b"[$l#U\x03" + struct.pack(">3i", 1, -2, 3)
        + _key("counted") + b"[#U\x02SU\x01aU\x07"
        + _key("typed_strings") + b"[$S#U\x02U\x01aU\x01b"
        + _key("empty") + b"[$d#L" + struct.pack(">q", 0)
        + _key("nested") + b"{#U\x01" + _key("x") + b"{}"
        + b"}"
    )
    value = ubjson.loads(data)
    assert isinstance(value, dict)
    typed = value.pop("typed")
    empty = value.pop("empty")
    assert value == {
        "int8": -1, "uint8": 255, "int16": -300, "int32": 70000, "int64": -(2**40), "f32": 0.5,
        "f64": 1e300, "text": "héllo", "big": "1e5", "char": "x", "flags": [True, False, None],
        "counted": ["a", 7], "typed_strings": ["a", "b"], "nested": {"x": {}},
    }
    assert typed.tolist() == [1, -2, 3] and typed.dtype == np.dtype(">i4")
    assert empty.size == 0 and empty.dtype == np.dtype(">f4")


@pytest.mark.parametrize(
    "data, message",
    [
        (b"{" + _key("a") + b"[$d#U\x04" + b"\x00" * 8, "the data ends at byte 18"),  # 2 of 4 floats
        (b"{" + _key("a") + b"l\x00\x00", "the data ends"),
        (b"{" + _key("a"), "the data ends"),
        (b"SU\x09short", "the data ends"),
        (b"[" + b"i\x01", "the data ends"),
        (b"i\x01i\x02", "2 bytes after the value, at byte 2"),
        (b"[i\x01X]", "unknown marker 'X' at byte 3"),
        (b"[$l" + b"i\x01]", "a typed container needs a count, at byte 3"),
        (b"Sd\x00\x00\x00\x00", "a length must be an integer, got 'd' at byte 1"),
        (b"[#i\xff]", "negative length -1 at byte 2"),
    ],
)
def test_broken_input_is_a_value_error_naming_where(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=f"UBJSON: {message}"):
        ubjson.loads(data)
