"""A partly measured history: every commit in order, a value only where it was measured.

File layout (CSV, separated by ``,`` ``;`` tab or ``|`` as its header shows):
``commit,value`` with an optional ``series_id`` column;
one row per commit in history order, the ``value`` cell empty where the
commit was not measured. Several rows of one commit (re-runs, wherever they
appear) are one commit: their values are averaged and the commit keeps its
first place. A value must be usable (:mod:`triage.core.values`: 0 or a
magnitude in [1e-100, 1e100]). Errors name the file, the line (header =
line 1) and the problem.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.errors import InputError
from triage.core.values import check_values
from triage.readers.otava import sniff_delimiter
from triage.readers.source import (
    check_header,
    csv_errors,
    display_name,
    plain_file,
    stem,
    without_implicit_index,
)
from triage.sampling.gp import HistoryGP


@dataclass
class PartialHistory:
    """``values[i]`` is NaN where commit ``commits[i]`` was not measured."""

    series_id: str
    commits: np.ndarray
    values: np.ndarray

    @property
    def measured(self) -> np.ndarray:
        return np.flatnonzero(np.isfinite(self.values))

    def position(self, commit: str, source: str | Path) -> int:
        """Where ``commit`` is: its id, or a unique prefix of at least 4 characters (a short git hash)."""
        commit = str(commit).strip()
        hits = np.flatnonzero(self.commits == commit)
        if len(hits) == 0 and len(commit) >= 4:
            hits = np.flatnonzero(np.char.startswith(self.commits.astype(str), commit))
            if len(hits) > 1:
                some = ", ".join(repr(str(c)) for c in self.commits[hits[:5]])
                raise InputError(
                    source,
                    None,
                    f"commit {commit!r} is the start of {len(hits)} commit ids ({some}): give more of it",
                )
        if len(hits) == 0:
            short = " (a prefix needs at least 4 characters)" if 0 < len(commit) < 4 else ""
            raise InputError(source, None, f"commit {commit!r} is not in series {self.series_id!r}{short}")
        return int(hits[0])


def read_partial(
    path: str | Path, series: str | None = None, *, prefer: str | None = None
) -> PartialHistory:
    """Read one series of a partly measured history (see module docstring).

    ``path`` may be ``-`` (stdin) and gzip or zstd compressed (told by content).
    ``prefer``: without ``series``, the series to take from a file of several
    when it holds that one (``culprit``'s oracle: the series of ``--data``).
    """
    with plain_file(path, directory_ok=False) as plain:
        frame = _read_cells(plain, display_name(path))
    path = Path(display_name(path))
    # The ids in the file are compared stripped; so is the one asked for.
    series = series.strip() if series is not None else None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in ("commit", "value") if c not in frame.columns]
    if missing:
        raise InputError(
            path,
            1,
            f"missing column {', '.join(map(repr, missing))} (found: {', '.join(frame.columns)})",
        )
    lines = np.arange(2, len(frame) + 2)
    if "series_id" in frame.columns:
        ids = frame["series_id"].str.strip()
        blank = (ids == "").to_numpy()
        if blank.any():
            # A row of no series: it was listed as a series named "" ("choose one with --series
            # (s1, )"), or the whole file became a series without a name.
            raise InputError(path, int(lines[np.argmax(blank)]), "series_id is missing")
        names = list(dict.fromkeys(ids))
        if series is None and prefer is not None and len(names) > 1 and prefer.strip() in names:
            series = prefer.strip()
        if series is None:
            if len(names) > 1:
                raise InputError(
                    path,
                    None,
                    f"{len(names)} series in the file: choose one with --series "
                    # repr: an id holding a line break or a tab broke the one-line error
                    f"({', '.join(map(repr, names[:5]))}{', ...' if len(names) > 5 else ''})",
                )
            series = names[0] if names else stem(path)
        keep = (ids == series).to_numpy()
        if not keep.any():
            raise InputError(path, None, f"no series {series!r} in the file")
        frame, lines = frame[keep], lines[keep]
    elif series is None:
        series = stem(path)
    if frame.empty:
        raise InputError(path, None, "no rows")
    commits = frame["commit"].str.strip().to_numpy(dtype=object)
    empty_commit = commits == ""
    if empty_commit.any():
        raise InputError(path, int(lines[np.argmax(empty_commit)]), "commit is missing")
    text = frame["value"].str.strip()
    values = pd.to_numeric(text.where(text != ""), errors="coerce").to_numpy(dtype=float)
    bad = (text != "").to_numpy() & ~np.isfinite(values)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(
            path,
            int(lines[i]),
            f"value {text.iloc[i]!r} is not a finite number (leave the cell empty for an unmeasured commit)",
        )
    # The project's one range rule: the GP and the culprit search square values.
    given = np.isfinite(values)
    check_values(values[given], path, lines[given])
    per = (
        pd.DataFrame({"commit": commits, "value": values})
        .groupby("commit", sort=False)["value"]
        .mean()
    )
    return PartialHistory(
        str(series), per.index.to_numpy(dtype=object).astype(str), per.to_numpy(dtype=float)
    )



def _read_cells(plain: Path, shown: str) -> pd.DataFrame:
    """Every cell of a plain CSV file as text; errors name ``shown`` (the file the user gave)."""
    with open(plain, "rb") as fh:
        header = fh.readline().decode("utf-8", errors="replace")
    sep = sniff_delimiter(header)
    # compression=None: plain_file decompressed it already, whatever its suffix says.
    # The delimiter as every other CSV reader of the project takes it (`,` `;` tab or `|`, told
    # by the header): a spreadsheet's `commit;value` was "missing column 'commit', 'value'".
    with csv_errors(plain, shown):
        frame = pd.read_csv(plain, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True,
                            compression=None)
    # A trailing separator on every row (`c1,100.5,`) made pandas read the commits as the index,
    # the values as commits: "row 3: commit is missing". Lines are counted in the plain copy.
    try:
        frame = without_implicit_index(frame, plain, sep=sep)
    except InputError as exc:
        raise InputError(shown, exc.row, exc.problem) from None
    # A column named twice (`commit,value,value`) is refused, as by every other CSV reader of the
    # project: pandas renamed the second `value.1` and the first was read without a word.
    check_header(shown, names=[str(c).strip() for c in next(csv.reader([header], delimiter=sep))])
    return frame


def sample_plan(history: PartialHistory, budget: int, kernel: str = "brownian") -> pd.DataFrame:
    """The estimated history with its band and the next ``budget`` commits to measure.

    Columns: ``commit, position, measured, estimate, lower, upper, next``
    (``lower``/``upper``: mean -/+ 1.96 posterior predictive sd, where a
    reading of that commit would fall: the history's uncertainty plus the
    fitted measurement noise, so on a noisy series the band is about as wide
    at a measured commit as between two; ``next``: 1 for the first commit to
    measure, 2 for the second, ...; empty otherwise).
    """
    n = len(history.commits)
    pos = history.measured
    if len(pos) == 0:
        raise ValueError("no commit of the history is measured: measure at least one")
    gp = HistoryGP(kernel).fit(n, pos, history.values[pos])
    mean, std = gp.predict()
    picks = gp.next_positions(budget)
    rank = np.full(n, np.nan)
    rank[picks] = np.arange(1, len(picks) + 1)
    return pd.DataFrame(
        {
            "commit": history.commits,
            "position": np.arange(n),
            "measured": history.values,
            "estimate": mean,
            "lower": mean - 1.96 * std,
            "upper": mean + 1.96 * std,
            "next": pd.array(rank, dtype="Int64"),
        }
    )
