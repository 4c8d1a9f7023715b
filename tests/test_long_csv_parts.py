"""``long_csv_parts`` (values parsed as floats by the CSV parser where that is exact) equals the text path.

The text path reads every cell as text and parses a part's values with
``pandas.to_numeric`` (as ``load`` does for a whole file); the parts must hold
the same floats bit for bit and fail on the same row with the same words.
``text_codes`` (each distinct cell read once) must give what the text rule
gives row by row.
"""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pandas as pd
import pytest

import triage.loaders as loaders
from triage.core.errors import InputError
from triage.core.text_cells import text_codes
from triage.loaders import load, long_csv_parts

FIELDS = ("commits", "values", "labels", "timestamps", "true_change", "truth_label", "n_measurements")


def _assert_same(parts, whole):
    got = [h for part in parts for h in part]
    assert [h.series_id for h in got] == whole.series_ids
    for h in got:
        ref = whole[h.series_id]
        assert type(h.series_id) is str
        for name in FIELDS:
            a, b = getattr(h, name), getattr(ref, name)
            if a is None or b is None:
                assert a is None and b is None, name
                continue
            assert a.dtype == b.dtype, name
            if a.dtype.kind in "fM":  # bit for bit: -0.0 and 0.0 differ
                assert np.array_equal(a.view(np.int64), b.view(np.int64)), (h.series_id, name)
            else:
                assert a.tolist() == b.tolist(), (h.series_id, name)


def _outcome(read):
    try:
        return ("ok", read())
    except InputError as exc:
        return ("error", str(exc))


def _write(path, rows, header="series_id,commit,timestamp,value"):
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _series(name, values, day0=1):
    return [(name, f"c{i}", f"2024-05-{day0 + i:02d}T10:00:00Z", v) for i, v in enumerate(values)]


@pytest.fixture
def real_csv(shared_data, tmp_path):
    """The 372 real histories (``../shared/data/real``) as a plain long CSV."""
    out = tmp_path / "histories.csv"
    with gzip.open(shared_data / "real" / "histories.csv.gz", "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def test_real_histories_in_parts_equal_the_whole_file(real_csv):
    whole = load(real_csv)
    for rows in (7_000, 50_000):  # parts of whole series; a series spans chunks at 7,000
        _assert_same(list(long_csv_parts(real_csv, rows_per_part=rows)), whole)


def test_ordinary_values_take_the_float_path(real_csv, monkeypatch):
    seen = []
    real = loaders.dataset_from_long
    monkeypatch.setattr(loaders, "dataset_from_long", lambda frame, *a, **k: seen.append(frame["value"].dtype) or real(frame, *a, **k))
    parts = list(long_csv_parts(real_csv, rows_per_part=50_000))
    assert len(parts) == len(seen) > 1
    assert np.float64 in seen  # the fast path is taken, not only its fallback


# Values where the CSV parser's float and to_numeric's reading of the text
# could part: integer-only parts (read as integers: -0 is 0.0, 2**53 + 1
# rounds as an integer), True/False (floats for the parser, not numbers for
# to_numeric), infinities, padding that only Python's float() would take.
HARD = {
    "integers": ["5", "-0", "9007199254740993", "000000000000000000123", "12"],
    "integers then floats": ["5", "-0", "12345678901234567", "1.25", "2.5"],
    "padded": ["  1.5 ", "\u00a02.5", "3.5\u00a0", "+4.5", ".5", "5.", "1E+05"],
    "many digits": ["109.43312400605359", "0.1000000000000000055511151231257827", "3.141592653589793238462643383279", "1e-100"],
    "true false": ["True", "False"],
    "one true": ["1.5", "True", "2.5"],
    "not finite": ["1.5", "inf", "2.5"],
    "overflow": ["1.5", "1e400"],
    "nan": ["1.5", "nan"],
    "blank": ["1.5", "", "2.5"],
    "hex": ["1.5", "0x10"],
    "out of range": ["1.5", "1e101"],
}


@pytest.mark.parametrize("case", sorted(HARD))
@pytest.mark.parametrize("rows_per_part", [1, 2, 3, 100])
def test_hard_values_read_as_the_whole_file_reads_them(tmp_path, case, rows_per_part):
    # an ordinary series before and after, so the hard one sits in a later part
    rows = _series("a", ["1.25", "2.5", "3.75"]) + _series("b", HARD[case]) + _series("c", ["0.5", "0.25"])
    path = _write(tmp_path / "hard.csv", rows)
    # The text path, part by part: a part of integers only is read as
    # integers (-0 -> 0.0), as the whole file is not when it holds a decimal.
    expected = _outcome(lambda: list(loaders._long_csv_parts(path, rows_per_part)))
    got = _outcome(lambda: list(long_csv_parts(path, rows_per_part=rows_per_part)))
    assert got[0] == expected[0], (got, expected)
    if got[0] == "error":
        assert got[1] == expected[1]
    else:
        assert len(got[1]) == len(expected[1])
        for part, ref in zip(got[1], expected[1], strict=True):
            _assert_same([part], ref)


def test_a_chunk_of_true_false_between_number_chunks_is_refused_by_its_row(tmp_path):
    # The parser reads a chunk of only True / False as 1.0 / 0.0; the reader must not.
    rows = _series("a", ["1.5", "2.5", "True", "False", "3.5", "4.5"])
    path = _write(tmp_path / "bool.csv", rows)
    with pytest.raises(InputError, match=r"row 4: value 'True' is not a number"):
        list(long_csv_parts(path, rows_per_part=2))


@pytest.mark.parametrize("dtype", ["str", "object", "category", "string"])
def test_text_codes_give_the_text_rule_row_by_row(dtype):
    cells = ["b", " a", "a", None, "a ", "\u00a0a", "", "b", "x\x00", None, "  ", "c"]
    raw = pd.Series(cells, dtype=dtype)
    rule = raw.astype(object).where(raw.notna(), "").astype(str).str.strip().to_numpy(dtype=object)
    for strip, expected in ((True, rule), (False, raw.astype(object).where(raw.notna(), "").astype(str).to_numpy())):
        codes, uniques = text_codes(raw, strip=strip)
        assert uniques[codes].tolist() == list(expected)
        assert len(set(uniques.tolist())) == len(uniques)
        # numbered by first appearance, as pandas.factorize numbers the row texts
        assert codes.tolist() == pd.factorize(np.asarray(expected, dtype=object))[0].tolist()


def test_a_header_without_rows_is_refused_in_words(tmp_path):
    path = _write(tmp_path / "empty.csv", [])
    with pytest.raises(InputError, match="file has a header but no data rows"):
        list(long_csv_parts(path))
