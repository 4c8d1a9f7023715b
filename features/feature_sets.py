"""The feature-set file: which feature columns a model uses, and how they were chosen.

:mod:`features.selection` writes it; training, scoring and the online loop
read it. It is a JSON object::

    {"names": ["pre_mean", "after_mean", ...],   feature columns, matrix order
     "fitness": 0.93, "metric": "accuracy",       cross-validated score
     "generations": 12, "n_evaluated": 1834,      how long the search ran
     "seed": 0, "data_hash": "<sha256>",          reproducibility
     "created": "2024-05-01T12:00:00+00:00",
     ...}                                          optional details (unit, history)

:func:`load_feature_set` reads the whole file strictly; :func:`read_feature_set`
needs only the column names and also accepts a bare JSON list of them (a
hand-written subset). ``triage select-features`` adds the ``window`` it was
chosen for; :func:`check_window` refuses the file for another ``--window``
(``triage train`` / ``triage evaluate``). Problems raise
:class:`~triage.core.errors.InputError` naming the file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from triage.core.atomic import write_text_atomic
from triage.core.errors import InputError
from triage.core.json_input import read_json
from triage.features.windows import ADAPTIVE

#: Fitness metrics a selection may use (and a file may name).
METRICS: tuple[str, ...] = ("accuracy", "auc")
#: Keys every feature-set file has (others, such as ``history``, are optional).
REQUIRED_KEYS: tuple[str, ...] = (
    "names",
    "fitness",
    "metric",
    "generations",
    "n_evaluated",
    "seed",
    "data_hash",
    "created",
)


@dataclass
class FeatureSet:
    """A selected feature subset and how it was found.

    Attributes
    ----------
    names : list of str
        Feature columns, in the feature matrix's column order.
    fitness : float
        Cross-validated score of the subset (``metric``), in [0, 1].
    metric : ``"accuracy"`` or ``"auc"``
    generations : int
        Generations evolved after the initial population (fewer than asked
        when the early stop fired).
    n_evaluated : int
        Distinct subsets whose fitness was computed.
    seed : int
    data_hash : str
        SHA-256 of the training rows the fitness was computed on (see
        :func:`features.matrix.data_hash`), so a model can check it is trained
        on the data the subset was selected for.
    created : str
        ISO 8601 UTC time of the selection.
    extra : dict
        Optional details (``unit``, ``population``, ``n_splits``,
        ``n_estimators``, per-generation ``history``); saved as top-level keys.
    """

    names: list[str]
    fitness: float
    metric: str
    generations: int
    n_evaluated: int
    seed: int
    data_hash: str
    created: str
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = asdict(self)
        extra = out.pop("extra")
        return {**out, **{k: v for k, v in extra.items() if k not in out}}

    @classmethod
    def from_dict(cls, data: dict) -> FeatureSet:
        missing = [k for k in REQUIRED_KEYS if k not in data]
        if missing:
            raise ValueError(f"feature set lacks {', '.join(missing)}")
        names = check_names(data["names"])
        if data["metric"] not in METRICS:
            raise ValueError(f"feature set metric {data['metric']!r} is not one of {', '.join(METRICS)}")
        return cls(
            names=names,
            fitness=float(data["fitness"]),
            metric=str(data["metric"]),
            generations=int(data["generations"]),
            n_evaluated=int(data["n_evaluated"]),
            seed=int(data["seed"]),
            data_hash=str(data["data_hash"]),
            created=str(data["created"]),
            extra={k: v for k, v in data.items() if k not in REQUIRED_KEYS},
        )

    def select(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The columns of ``frame`` this set names, in its order; ``KeyError`` if any is absent."""
        missing = [n for n in self.names if n not in frame.columns]
        if missing:
            raise KeyError(f"feature matrix lacks selected column(s) {', '.join(missing)}")
        return frame[self.names]


def check_names(names: object) -> list[str]:
    """``names`` as a list if it is a non-empty list of distinct strings, else ``ValueError``."""
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ValueError("feature set 'names' must be a non-empty list of column names")
    if len(set(names)) != len(names):
        raise ValueError("feature set 'names' has duplicates")
    return list(names)


def save_feature_set(feature_set: FeatureSet, path: str | Path) -> Path:
    """Write ``feature_set`` as JSON at ``path`` atomically (temp file, then rename)."""
    text = json.dumps(feature_set.to_dict(), indent=2) + "\n"
    return write_text_atomic(text, path, fsync=True)


def load_feature_set(path: str | Path) -> FeatureSet:
    """Read a whole feature-set file (every key of :data:`REQUIRED_KEYS`)."""
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, None, "expected a JSON object (a feature set)")
    try:
        return FeatureSet.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise InputError(path, None, str(exc)) from None


def read_feature_set(path: str | Path) -> list[str]:
    """The feature columns a feature-set file lists: its ``names``, or a bare JSON list of names."""
    path = Path(path)
    data = _read_json(path)
    try:
        return check_names(data.get("names") if isinstance(data, dict) else data)
    except ValueError as exc:
        raise InputError(path, None, f"not a feature-set file (`triage select-features` writes one): {exc}") from None


def recorded_window(path: str | Path) -> str | int | None:
    """The window a feature-set file was chosen for (its ``window``), None when it records none.

    ``triage select-features`` records its ``--window`` as given (``"adaptive"``,
    ``"3"``); it is read the way ``--window`` is: ``"adaptive"`` in any case,
    or an integer >= 0. A bare list of names records no window. Raises
    :class:`InputError` naming the file for a window that is neither.
    """
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("window") is None:
        return None
    raw = data["window"]
    text = str(raw).strip().lower()
    if text == ADAPTIVE:
        return ADAPTIVE
    try:
        if isinstance(raw, bool) or isinstance(raw, float):
            raise ValueError
        w = int(text)
    except ValueError:
        w = -1
    if w < 0:
        raise InputError(path, None, f"feature set records an unknown window {raw!r} "
                                     f"(expected {ADAPTIVE!r} or an integer >= 0)")
    return w


def check_window(path: str | Path, window: str | int) -> None:
    """Refuse a feature-set file chosen for another Pre/After window than ``window``.

    A subset selected on window-0 rows (After = one commit, where ``after_sd``
    and the like are constant) is not a good subset for window 3 or for
    adaptive windows; training or evaluating with it would silently use the
    wrong columns. A file that records no window (a hand-written list) is
    accepted. Raises :class:`InputError` naming the file and both windows.
    """
    chosen = recorded_window(path)
    if chosen is None or chosen == window:
        return
    raise InputError(path, None, f"feature set was chosen for window {chosen}, not for --window {window}: "
                                 f"use --window {chosen}, or select features again with --window {window}")


def check_columns(path: str | Path, names: list[str], columns) -> None:
    """Refuse a feature-set file naming columns a feature matrix lacks, naming the file, not the data.

    ``columns``: the matrix's columns. The set was chosen on another window
    kind (candidate-bounded ``pair_*`` / ``ctx_*`` columns) or another version.
    """
    have = set(columns)
    missing = [n for n in names if n not in have]
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        raise InputError(path, None, f"names column(s) the feature matrix lacks: {shown}")


def _read_json(path: Path) -> object:
    if not path.is_file():
        raise InputError(path, None, "no such file")
    return read_json(path)
