"""The file line of each record pandas reads from a CSV: what a CSV reader's errors name.

pandas skips blank lines (and lines of white space only) and reads a quoted
cell spread over several lines as one record, so "record number + 1" is the
file line only in a file without either. One home for the count, used by
every CSV reader that names rows (the long layout, Otava CSVs, candidate and
decision files).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def csv_record_lines(path: Path, n_records: int, sep: str = ",", quotechar: str = '"') -> np.ndarray:
    """The file line (1-based) of each of the ``n_records`` data records pandas read from the CSV ``path``.

    pandas skips blank lines (and lines of white space only) and reads a quoted
    cell over several lines as one record, so the record numbers plus one are
    the lines only in a file without either: a bad value after a blank line was
    reported a line or more too early. Such files are read once more with the
    csv module, which counts lines as it goes; a file of one record a line
    (the line count tells) is not. Should the two readers disagree on the
    records, the record numbers plus one are kept.
    """
    simple = np.arange(2, n_records + 2)
    newlines, last = 0, b""
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            newlines, last = newlines + chunk.count(b"\n"), chunk[-1:]
    if newlines == n_records + (last == b"\n"):
        return simple  # a header and one line per record: nothing skipped, nothing spread over lines
    import csv

    lines: list[int] = []
    header_seen, end = False, 0
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=sep, quotechar=quotechar, skipinitialspace=True)
        try:
            for row in reader:
                start, end = end + 1, reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # a blank line: pandas skips it
                if header_seen:
                    lines.append(start)
                header_seen = True
        except (csv.Error, UnicodeDecodeError):
            return simple
    return np.asarray(lines) if len(lines) == n_records else simple


def file_line(path: Path, row: int, sep: str = ",", quotechar: str = '"') -> int:
    """The file line of the data record a reader numbered ``row`` (header = 1, one line a record).

    For an error found by a reader that counted records, not lines (the long
    layout read in parts): the same count as :func:`csv_record_lines`, done
    only when there is an error to name. ``row`` is returned when the file
    cannot be read again or has fewer records.
    """
    import csv

    if row < 2:
        return row
    wanted, seen, end = row - 1, -1, 0  # the header is record 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, quotechar=quotechar, skipinitialspace=True)
            for record in reader:
                start, end = end + 1, reader.line_num
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue
                seen += 1
                if seen == wanted:
                    return start
    except (OSError, csv.Error, UnicodeDecodeError):
        pass
    return row
