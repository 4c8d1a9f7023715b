"""Candidates in noise-free stretches: a step the model need not judge.

Some metrics do not vary from run to run: a binary's size, allocation or
instruction counts, peak memory of a deterministic program. Where Pre and
After are each one repeated value, nothing about the candidate is uncertain:
the values either changed at the candidate and stayed changed (a real step,
however small), or did not change at all (a false alert). A model trained on
noisy histories cannot see that: the level-shift measures divide by a noise
floor (:mod:`triage.features.level_shift` uses the series' resolution, which
for a series of two values is the step itself, so every such step reads as
"1 noise sd"), and the per-window characteristics of a flat window are fill
values. On a flat 1000 -> 1100 step the bundled scoring model answered
P(true) 0.54, and a 16-byte step in 52,000 bytes 0.19; the online model
missed both.

So the decision layer (:func:`triage.inference.decide` for ``score`` and
``label``; the online loop for ``watch`` / ``detect``) asks this module first:
:func:`verdict` reads the pair columns the feature matrix always carries
(``norm_sd_pre`` / ``norm_sd_after`` are exactly 0 only for a window whose
values are all equal, as the merged min-max normalisation maps them to
exactly 0 or 1; ``norm_mean_*`` then say whether the two values differ) and
the window lengths; the online loop asks :func:`stream_verdict` with Pre's
running minimum and maximum (:meth:`triage.features.incremental.PreState.flat_value`)
and the K + 1 After values, so both read the same rule.

The lengths asked for are a choice, not a fit: at least :data:`MIN_PRE`
commits before, all equal, and :data:`MIN_AFTER` after. A coarsely quantised
noisy series also repeats values (``rhai``'s integer ns/iter hold runs of up
to 15 equal values among the 372 real histories), so 5 or 10 equal values
would call its flips steps; no real history holds a run of 20, so the rule
never fires on them and the real-data figures do not move (each Pre window
it needs is a run of >= 20 equal values; the injected shifts multiply whole
stretches, which keeps runs as they are). :data:`MIN_AFTER` is 2 so that one
odd reading (the online loop at K = 0) is still the model's to judge. Any
difference between the two values counts as a step, however small, down to
the flatness tolerance of the whole feature catalogue
(:data:`triage.features.catalogue.FLAT_RTOL`, 1e-10 of the value): windows
that agree to ten significant digits are one value there, which is what the
batch rule reads (``norm_*`` are all 0), so the online rule compares with
the same tolerance. Without it a 16-byte step in 5e12 bytes was "no change"
for ``score`` and ``label`` but a step for ``watch``, whose re-check then
withdrew it (its robust scale of a flat Pre is 1e-9 of the level).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from triage.features.catalogue import is_flat

#: Fewest Pre commits, all equal, for a noise-free verdict.
MIN_PRE = 20
#: Fewest After commits (the candidate's included), all equal, for a noise-free verdict.
MIN_AFTER = 2
#: :func:`verdict`'s answers.
NOT_NOISE_FREE, NO_CHANGE, STEP = -1, 0, 1
#: The columns :func:`verdict` reads (all in every feature matrix of :func:`triage.features.extract.extract_features`).
COLUMNS: tuple[str, ...] = (
    "pre_series_length", "after_series_length", "norm_mean_pre", "norm_mean_after", "norm_sd_pre", "norm_sd_after",
)


def verdict(matrix: pd.DataFrame) -> np.ndarray:
    """The noise-free verdict of each row of a feature matrix.

    Returns an int array, shape (len(matrix),): :data:`STEP` (Pre is one
    value over >= :data:`MIN_PRE` commits, After another over >=
    :data:`MIN_AFTER`), :data:`NO_CHANGE` (both windows one and the same
    value) or :data:`NOT_NOISE_FREE` (anything else, and every row of a
    matrix lacking one of :data:`COLUMNS`).
    """
    out = np.full(len(matrix), NOT_NOISE_FREE, dtype=np.int64)
    if not len(matrix) or not set(COLUMNS) <= set(matrix.columns):
        return out
    col = {c: pd.to_numeric(matrix[c], errors="coerce").to_numpy(dtype=np.float64) for c in COLUMNS}
    return verdict_arrays(**{c: col[c] for c in COLUMNS})


def verdict_arrays(
    pre_series_length: np.ndarray,
    after_series_length: np.ndarray,
    norm_mean_pre: np.ndarray,
    norm_mean_after: np.ndarray,
    norm_sd_pre: np.ndarray,
    norm_sd_after: np.ndarray,
) -> np.ndarray:
    """:func:`verdict` on the columns as arrays, each shape (n,) (the online loop's rows)."""
    flat = (
        (pre_series_length >= MIN_PRE) & (after_series_length >= MIN_AFTER)
        & (norm_sd_pre == 0.0) & (norm_sd_after == 0.0)
    )
    out = np.full(flat.shape, NOT_NOISE_FREE, dtype=np.int64)
    out[flat] = np.where(norm_mean_pre[flat] != norm_mean_after[flat], STEP, NO_CHANGE)
    return out


def stream_verdict(pre_n: int, pre_value: float | None, after: np.ndarray) -> int:
    """:func:`verdict` for the online loop: Pre's length and its one value (None unless every Pre value is equal), After's values (shape (K + 1,))."""
    if pre_value is None or pre_n < MIN_PRE or after.size < MIN_AFTER:
        return NOT_NOISE_FREE
    if is_flat(np.append(after, pre_value)):
        return NO_CHANGE
    if not (after == after[0]).all():
        return NOT_NOISE_FREE
    return STEP


def reason(kind: int, pre_length: float, after_length: float) -> str:
    """The explanation of a noise-free verdict, for a decision's ``explanation``."""
    pre, after = int(pre_length), int(after_length)
    if kind == STEP:
        return (f"noise-free step: the {pre} commits before are one value and the {after} from this commit on "
                "another (a deterministic metric changed; decided without the model)")
    # "One value" to the catalogue's tolerance: values that differ past the tenth significant digit count as equal.
    return (f"noise-free, no change: the {pre} commits before and the {after} from this commit on are one "
            "value to 10 significant digits (decided without the model)")
