"""The one grammar for ``key=value`` parameters given as text (``--param`` on the command line).

Grammar
-------
* Each item is ``key=value``; the first ``=`` splits it, and key and value
  are stripped of surrounding blanks. An item without ``=`` or with an empty
  key is an error naming the item.
* A later item with the same key wins.
* Typed values (:func:`typed_value`): when the expected type is known from a
  default value (the detectors' registry), the text is read as that type:
  ``bool`` from ``1/true/yes/on`` or ``0/false/no/off`` (any case), ``int``,
  ``float``, a tuple of names from comma-separated text (blank parts dropped),
  anything else as text.
* Inferred values (:func:`infer_value`): when nothing says the type (model
  parameters handed to scikit-learn / XGBoost), an int if the text is one,
  else a float, else ``true`` / ``false`` / ``none`` (any case) as
  ``True`` / ``False`` / ``None``, else the text.

Errors are ``ValueError`` with a message naming the item; callers turn them
into their own kind (the CLI's bad-parameter exit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
_KEYWORDS: dict[str, object] = {"true": True, "false": False, "none": None}


def split_items(items: Iterable[str] | None) -> dict[str, str]:
    """``["a=1", "b = x"]`` -> ``{"a": "1", "b": "x"}`` (stripped text, later keys win)."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"parameter {item!r} is not key=value")
        out[key] = value.strip()
    return out


def typed_value(text: str, default: Any) -> Any:
    """``text`` read as the type of ``default`` (see the module docstring)."""
    if isinstance(default, bool):
        low = text.strip().lower()
        if low in TRUE_WORDS:
            return True
        if low in FALSE_WORDS:
            return False
        raise ValueError(f"{text!r} is not a boolean")
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            pass
        # 1e9 or 5.0 name a whole number too; Python's own words ("invalid literal for int()") do not help
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a whole number") from None
        if not number.is_integer():
            raise ValueError(f"{text!r} is not a whole number")
        return int(number)
    if isinstance(default, float):
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    if isinstance(default, (tuple, list)):
        return tuple(part.strip() for part in text.split(",") if part.strip())
    return text


def as_text(value: Any) -> str:
    """``value`` written as :func:`typed_value` reads it back: a tuple as its comma-separated names.

    ``triage detectors`` showed ``members=('perfherder', 'hybrid_welch', ...)``, which ``--param``
    then read as names with quotes and brackets in them and refused.
    """
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(value)


def infer_value(text: str) -> object:
    """``text`` as an int, a float, True / False / None, or itself (see the module docstring)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return _KEYWORDS.get(text.lower(), text)


def parse_params(
    items: Iterable[str] | None, defaults: Mapping[str, Any] | None = None, *, owner: str = ""
) -> dict[str, Any]:
    """Parse ``key=value`` items: typed and checked against ``defaults`` when given, else inferred.

    ``owner`` names what the parameters belong to in messages (e.g. ``"detector 'pelt'"``).
    """
    out: dict[str, Any] = {}
    for key, text in split_items(items).items():
        if defaults is None:
            out[key] = infer_value(text)
            continue
        if key not in defaults:
            where = f" for {owner}" if owner else ""
            raise ValueError(f"unknown parameter {key!r}{where} (known: {', '.join(defaults)})")
        try:
            out[key] = typed_value(text, defaults[key])
        except ValueError as exc:
            raise ValueError(f"parameter {key}: {exc}") from None
    return out
