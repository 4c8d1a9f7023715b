"""A reader of Universal Binary JSON (UBJSON, draft 12), the format of XGBoost's ``save_raw("ubj")``.

XGBoost writes a model's node arrays as UBJSON's typed arrays (``[$d#L<count>``
then the big-endian values). Read here with ``numpy.frombuffer``, a 400-tree
model's arrays come out in milliseconds; the JSON form of the same model took
0.12 s to write and 0.08 s to parse into Python lists, at every load of a
compiled XGBoost model (``training.compiled.flatten_xgboost``).

Only what the specification defines is read; anything else is a
:class:`ValueError` naming the byte offset. Typed arrays of numbers are
returned as read-only numpy arrays, every other array as a list.
"""

from __future__ import annotations

import struct

import numpy as np

#: Numeric markers: (struct format, numpy dtype), big-endian as the specification says.
_NUMBERS: dict[int, tuple[struct.Struct, np.dtype]] = {
    ord(marker): (struct.Struct(">" + code), np.dtype(">" + dtype))
    for marker, code, dtype in [("i", "b", "i1"), ("U", "B", "u1"), ("I", "h", "i2"), ("l", "i", "i4"),
                                ("L", "q", "i8"), ("d", "f", "f4"), ("D", "d", "f8")]
}
_INTEGERS = {marker: fmt for marker, (fmt, dtype) in _NUMBERS.items() if dtype.kind in "iu"}
_CONSTANTS = {ord("T"): True, ord("F"): False, ord("Z"): None}
_OBJECT, _OBJECT_END, _ARRAY, _ARRAY_END = b"{}[]"
_STRING, _HIGH_PRECISION, _CHAR, _NOOP, _TYPE, _COUNT = b"SHCN$#"


def loads(data: bytes) -> object:
    """The value ``data`` holds: dicts, lists, str, int, float, bool, None and numpy arrays."""
    buf = bytes(data)
    try:
        value, end = _value(buf, 0, None)
    except (IndexError, struct.error) as exc:  # a read past the end: the data stops inside a value
        raise ValueError(f"UBJSON: the data ends at byte {len(buf)}, inside a value") from exc
    if end != len(buf):
        raise ValueError(f"UBJSON: {len(buf) - end} bytes after the value, at byte {end}")
    return value


# The functions below index ``buf`` without checking its length first: a read past the end raises
# IndexError or struct.error, which :func:`loads` reports. Checks per byte took most of the time.


def _value(buf: bytes, pos: int, marker: int | None) -> tuple[object, int]:
    """The value at ``pos`` (its marker read there unless a typed container gave it) and where it ends."""
    if marker is None:
        marker = buf[pos]
        pos += 1
        while marker == _NOOP:
            marker = buf[pos]
            pos += 1
    if marker == _OBJECT:
        return _object(buf, pos)
    if marker == _ARRAY:
        return _array(buf, pos)
    number = _NUMBERS.get(marker)
    if number is not None:
        return number[0].unpack_from(buf, pos)[0], pos + number[0].size
    if marker == _STRING or marker == _HIGH_PRECISION:  # the second: a number written as a string
        return _string(buf, pos)
    if marker in _CONSTANTS:
        return _CONSTANTS[marker], pos
    if marker == _CHAR:
        return chr(buf[pos]), pos + 1
    raise ValueError(f"UBJSON: unknown marker {chr(marker)!r} at byte {pos - 1}")


def _count(buf: bytes, pos: int) -> tuple[int, int]:
    """A length or count at ``pos`` (its marker, then an integer of any size), never negative."""
    integer = _INTEGERS.get(buf[pos])
    if integer is None:
        raise ValueError(f"UBJSON: a length must be an integer, got {chr(buf[pos])!r} at byte {pos}")
    n = integer.unpack_from(buf, pos + 1)[0]
    if n < 0:
        raise ValueError(f"UBJSON: negative length {n} at byte {pos}")
    return n, pos + 1 + integer.size


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    n, pos = _count(buf, pos)
    end = pos + n
    if end > len(buf):
        raise IndexError(end)
    return buf[pos:end].decode("utf-8"), end


def _container_header(buf: bytes, pos: int) -> tuple[int | None, int | None, int]:
    """The optional ``$type`` and ``#count`` after ``[`` or ``{``."""
    kind = count = None
    if buf[pos] == _TYPE:
        kind = buf[pos + 1]
        pos += 2
        if buf[pos] != _COUNT:
            raise ValueError(f"UBJSON: a typed container needs a count, at byte {pos}")
    if buf[pos] == _COUNT:
        count, pos = _count(buf, pos + 1)
    return kind, count, pos


def _array(buf: bytes, pos: int) -> tuple[object, int]:
    kind, count, pos = _container_header(buf, pos)
    if count is not None and kind in _NUMBERS:
        dtype = _NUMBERS[kind][1]
        end = pos + count * dtype.itemsize
        if end > len(buf):
            raise IndexError(end)
        return np.frombuffer(buf, dtype, count, pos), end
    return _entries(buf, pos, kind, count, _ARRAY_END, keyed=False)


def _object(buf: bytes, pos: int) -> tuple[dict[str, object], int]:
    kind, count, pos = _container_header(buf, pos)
    pairs, end = _entries(buf, pos, kind, count, _OBJECT_END, keyed=True)
    return dict(pairs), end


def _entries(buf: bytes, pos: int, kind: int | None, count: int | None, end: int, keyed: bool) -> tuple[list, int]:
    """A container's values (``(key, value)`` pairs where ``keyed``) and where the container ends.

    ``count`` entries each of type ``kind`` when the header gave them; else entries up to the
    ``end`` marker, past any no-op padding.
    """
    items: list = []
    while count is None or len(items) < count:
        if count is None:
            marker = buf[pos]
            if marker == end:
                return items, pos + 1
            if marker == _NOOP:
                pos += 1
                continue
        if keyed:
            key, pos = _string(buf, pos)
        value, pos = _value(buf, pos, kind)
        items.append((key, value) if keyed else value)
    return items, pos
