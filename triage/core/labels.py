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

# Spellings of "no label" that exports use for an empty cell.
_EMPTY_SPELLINGS = frozenset({"", "nan", "none", "na", "null"})


def normalise_label(raw: object) -> str:
    """Map a raw label (MongoDB status, Perfherder status or empty) to a canonical one.

    Raises ``KeyError`` for an unknown label; loaders turn it into an
    :class:`~triage.core.errors.InputError` that names the row.
    """
    if raw is None:
        return NONE
    if isinstance(raw, float) and raw != raw:  # NaN from pandas for an empty cell
        return NONE
    text = str(raw).strip().lower().replace("-", "_").replace(" ", "_")
    if text in _EMPTY_SPELLINGS:
        return NONE
    if text in CANONICAL:
        return text
    if text in PERFHERDER:
        return PERFHERDER[text]
    raise KeyError(raw)


def known_labels() -> str:
    """A human-readable list of accepted labels, for error messages."""
    names = [label for label in CANONICAL if label] + sorted(PERFHERDER)
    return ", ".join(names) + " or empty"
