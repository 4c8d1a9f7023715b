"""A column's cells as text, computed once per distinct cell.

Every reader's text rule (:mod:`triage.core.history`'s ids and labels,
:mod:`triage.core.timestamps`' text column) reads a cell as
``str(cell)``, a missing cell (``None``, NaN, ``pd.NA``) as ``""``, and
often strips it with Python's ``str.strip``. A long file repeats its cells
(a commit id and its timestamp once per series and measurement: the
``default`` preset's 3 M rows hold about 10 % distinct commits), so
:func:`text_codes` applies that rule to each distinct cell once and returns
integer codes for the rows. The rows' text is then ``uniques[codes]``, exactly
what the rule applied row by row gives.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _text(cells: pd.Series, strip: bool) -> np.ndarray:
    """The rule row by row (object array of ``str``)."""
    text = cells.astype(object).where(cells.notna(), "").astype(str)
    if strip:
        text = text.str.strip()
    return text.to_numpy(dtype=object)


def text_codes(raw: pd.Series, *, strip: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)``: row ``i`` reads ``uniques[codes[i]]``.

    ``uniques`` (object array of distinct ``str``) are in the order of their
    first row, as :func:`pandas.factorize` orders them, so ``codes`` number
    the distinct texts by first appearance. ``strip``: Python's ``str.strip``
    after ``str``.
    """
    if isinstance(raw.dtype, pd.StringDtype | pd.CategoricalDtype):
        # Equal cells of these dtypes are equal strings (categories: one
        # category per code), so the rule can run on the distinct cells. An
        # object column is left to the rule row by row: pandas' hashing calls
        # 1, 1.0 and True one cell, which ``str`` tells apart.
        codes, cells = pd.factorize(raw, use_na_sentinel=True)
        if isinstance(raw.dtype, pd.StringDtype):
            # No missing cell among them: ``astype(object)...astype(str)`` would
            # give the same strings back, so go to ``str`` directly.
            as_str = pd.Series(cells).astype(str)
            cell_text = (as_str.str.strip() if strip else as_str).to_numpy(dtype=object)
        else:
            cell_text = _text(pd.Series(np.asarray(cells, dtype=object), dtype=object), strip)
        any_missing = bool((codes < 0).any())
        if any_missing:  # missing cells read as ""
            cell_text = np.append(cell_text, np.array([""], dtype=object))
            codes = np.where(codes < 0, len(cell_text) - 1, codes)
        merged, texts = pd.factorize(cell_text)
        if any_missing or len(texts) < len(cell_text):
            # Stripping made two cells one text (" a" and "a"), or the missing
            # cells' "" came last: number the texts again by first row.
            codes, first = pd.factorize(merged[codes])
            cell_text = np.asarray(texts, dtype=object)[first]
        return codes.astype(np.intp, copy=False), cell_text
    codes, uniques = pd.factorize(_text(raw, strip))
    return codes.astype(np.intp, copy=False), np.asarray(uniques, dtype=object)
