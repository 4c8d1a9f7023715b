"""Triage labels: MongoDB's statuses as the canonical vocabulary, and the
mapping from Mozilla Perfherder's alert statuses.

Canonical labels (MongoDB's triage statuses):

============================  ==========================================
label                         meaning
============================  ==========================================
``""`` (empty)                not a candidate: no detector flagged it
``true_positive``             a human confirmed a real change
``false_positive``            a human rejected the alert
``not_triaged``               flagged, nobody looked yet
``under_investigation``       flagged, being looked at
============================  ==========================================

``not_triaged`` and ``under_investigation`` form the *untriaged* group: the
candidates that batch labelling classifies.

Perfherder alert statuses map as follows (case-insensitive):

- ``invalid`` -> ``false_positive``
- ``fixed``, ``improvement``, ``backedout``, ``wontfix``, ``downstream``,
  ``reassigned``, ``acknowledged`` -> ``true_positive``
- ``untriaged`` -> ``not_triaged``; ``investigating`` -> ``under_investigation``

Perfherder's API gives statuses as integers (:data:`PERFHERDER_CODES`). An
alert's codes are 0 untriaged, 1 downstream, 2 reassigned, 3 invalid,
4 acknowledged; an alert summary's are 0 untriaged, 1 downstream,
2 reassigned, 3 invalid, 4 improvement, 5 investigating, 6 wontfix, 7 fixed,
8 backedout. The two agree wherever they overlap in meaning (4 is true
either way), so one table serves both: an integer label (``3``, ``"3"``,
``3.0``) is read as Perfherder's code.
"""

from __future__ import annotations

NONE = ""
TRUE_POSITIVE = "true_positive"
FALSE_POSITIVE = "false_positive"
NOT_TRIAGED = "not_triaged"
UNDER_INVESTIGATION = "under_investigation"

CANONICAL: tuple[str, ...] = (NONE, TRUE_POSITIVE, FALSE_POSITIVE, NOT_TRIAGED, UNDER_INVESTIGATION)
TRIAGED: frozenset[str] = frozenset({TRUE_POSITIVE, FALSE_POSITIVE})
UNTRIAGED: frozenset[str] = frozenset({NOT_TRIAGED, UNDER_INVESTIGATION})

PERFHERDER: dict[str, str] = {
    "invalid": FALSE_POSITIVE,
    "fixed": TRUE_POSITIVE,
    "improvement": TRUE_POSITIVE,
    "backedout": TRUE_POSITIVE,
    "wontfix": TRUE_POSITIVE,
    "downstream": TRUE_POSITIVE,
    "reassigned": TRUE_POSITIVE,
    "acknowledged": TRUE_POSITIVE,
    "untriaged": NOT_TRIAGED,
    "investigating": UNDER_INVESTIGATION,
}

#: Perfherder's integer statuses (alerts and alert summaries), by name.
PERFHERDER_CODES: dict[int, str] = {
    0: "untriaged",
    1: "downstream",
    2: "reassigned",
    3: "invalid",
    4: "acknowledged",  # "improvement" for a summary: a true change either way
    5: "investigating",
    6: "wontfix",
    7: "fixed",
    8: "backedout",
}

# Spellings of "no label" that exports use for an empty cell.
_EMPTY_SPELLINGS = frozenset({"", "nan", "none", "na", "null"})


def normalise_label(raw: object) -> str:
    """Map a raw label (MongoDB status, Perfherder status or empty) to a canonical one.

    Raises ``KeyError`` for an unknown label; loaders turn it into an
    :class:`~triage.core.errors.InputError` that names the row.
    """
    if raw is None or isinstance(raw, bool):
        if raw is None:
            return NONE
        raise KeyError(raw)
    if isinstance(raw, float) and raw != raw:  # NaN from pandas for an empty cell
        return NONE
    text = str(raw).strip().lower().replace("-", "_").replace(" ", "_")
    if text in _EMPTY_SPELLINGS:
        return NONE
    code = _integer(text)
    if code is not None:
        if code not in PERFHERDER_CODES:
            raise KeyError(raw)
        return PERFHERDER[PERFHERDER_CODES[code]]
    if text in CANONICAL:
        return text
    if text in PERFHERDER:
        return PERFHERDER[text]
    raise KeyError(raw)


def _integer(text: str) -> int | None:
    """``"3"`` or ``"3.0"`` -> 3; anything else None."""
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def known_labels() -> str:
    """A human-readable list of accepted labels, for error messages."""
    names = [label for label in CANONICAL if label] + sorted(PERFHERDER)
    return ", ".join(names) + f", Perfherder codes 0-{max(PERFHERDER_CODES)} or empty"
