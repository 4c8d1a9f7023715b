"""Turning what a user names as input into a plain, seekable, uncompressed file.

Readers parse files more than once (the sniffer reads the header, the reader
the rest) and pandas picks decompression by suffix. So every input goes
through :func:`plain_file` first:

* ``-``, ``/dev/stdin``, a FIFO or another non-regular file is read once into
  a temporary file (a pipe cannot be re-read);
* gzip and zstd content (told by its magic bytes, whatever the suffix) is
  decompressed into a temporary file named like the inner file
  (``histories.csv.gz`` -> ``histories.csv``), so layout sniffing by suffix
  keeps working;
* a plain file named like a compressed one (``history.csv.gz`` holding
  text) is copied under the inner name too: pandas would otherwise try to
  decompress it by its suffix and fail with an internal error;
* anything else is used in place.

Errors raised inside the block name the file the user gave (``<stdin>`` for
``-``), never the temporary copy; row numbers stay those of the uncompressed
text.
"""

from __future__ import annotations

import codecs
import gzip
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from triage.core.atomic import is_stdio
from triage.core.errors import InputError
from triage.core.input_names import display_name, forget_copy, register_copy
from triage.core.values import locale_number

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd")
ZSTD_CHUNK = 1 << 20  # compressed bytes fed to the decompressor at a time
UTF8_CHUNK = 1 << 20  # bytes decoded at a time when looking for a non-UTF-8 byte


def compression(path: Path) -> str | None:
    """``gzip``, ``zstd`` or None, from the file's first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def stem(path: str | Path) -> str:
    """A file's name without its suffixes of compression and format: ``c1`` for ``c1.json.gz``.

    The default series id of a file that holds one series (a JMH result, a partial history).
    """
    name = Path(path).name
    for suffix in COMPRESSED_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return Path(name).stem


def _inner_name(name: str) -> str:
    for suffix in COMPRESSED_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "input"
    return name


def _decompress(src: IO[bytes], kind: str, out: IO[bytes]) -> None:
    """The whole decompressed content of ``src`` into ``out``; a cut or corrupt archive raises."""
    if kind == "gzip":
        with gzip.GzipFile(fileobj=src) as stream:  # raises EOFError on a truncated member
            shutil.copyfileobj(stream, out)
        return
    _unzstd(src, out)


def _unzstd(src: IO[bytes], out: IO[bytes]) -> None:
    """Every frame of a zstd stream into ``out``, frame by frame.

    Not zstandard's ``stream_reader(read_across_frames=True)``: it stops
    quietly at a frame cut short, so a truncated file would be read in part
    (or as empty). A decompression object says when its frame is complete
    (``eof``); input that ends inside a frame is an :class:`EOFError`.
    """
    import zstandard  # only for zstd input

    dctx = zstandard.ZstdDecompressor()
    frame = dctx.decompressobj()
    inside = False  # bytes of a frame not yet complete have been fed
    try:
        while chunk := src.read(ZSTD_CHUNK):
            while chunk:
                out.write(frame.decompress(chunk))
                inside = True
                if not frame.eof:
                    break
                chunk, frame, inside = frame.unused_data, dctx.decompressobj(), False  # the next frame
    except zstandard.ZstdError as exc:  # corrupt data or trailing garbage
        raise ValueError(str(exc)) from None
    if inside:
        raise EOFError("truncated (the file ends inside a zstd frame)")


@contextmanager
def plain_file(path: str | Path, *, directory_ok: bool = True) -> Iterator[Path]:
    """A regular, uncompressed file with the content of ``path`` (see the module docstring).

    A directory is passed through when ``directory_ok`` (some layouts are
    directories), else it is an :class:`InputError`.
    """
    shown = display_name(path)
    stdin = is_stdio(path)
    given = Path("stdin" if stdin else path)
    if not stdin:
        try:
            mode = os.stat(given).st_mode
        except FileNotFoundError:
            raise InputError(shown, None, "no such file") from None
        except NotADirectoryError:
            raise InputError(shown, None, "no such file (a parent is not a directory)") from None
        if stat.S_ISDIR(mode):
            if not directory_ok:
                raise InputError(shown, None, "is a directory; expected a file")
            yield given  # directories (asv results, Otava tests, `triage synth` output) are read in place
            return
        if stat.S_ISREG(mode):
            _refuse_unreadable(given, shown)
            if compression(given) is None and _inner_name(given.name) == given.name:
                yield given
                return
    with tempfile.TemporaryDirectory(prefix="triage-input-") as tmpdir:
        copy = Path(tmpdir) / ("raw-" + given.name)
        with open(copy, "wb") as out:
            if stdin:
                shutil.copyfileobj(sys.stdin.buffer, out)
            else:
                with open(given, "rb") as src:
                    shutil.copyfileobj(src, out)
        if stdin or not stat.S_ISREG(mode):
            _refuse_unreadable(copy, shown)
        kind = compression(copy) if copy.stat().st_size else None
        target = copy
        if kind is not None:
            target = Path(tmpdir) / _inner_name(given.name)
            try:
                with open(copy, "rb") as raw, open(target, "wb") as out:
                    _decompress(raw, kind, out)
            except (OSError, EOFError, ValueError) as exc:  # truncated or corrupt archive
                raise InputError(shown, None, f"cannot decompress ({kind}): {exc}") from None
            copy.unlink()
            _refuse_unreadable(target, shown, decompressed=True)  # a tar archive, UTF-16 text, ... inside it
        else:
            target = copy.rename(Path(tmpdir) / _inner_name(given.name))
        if target.suffix.lower() != ".parquet" and _starts_with(target, b"PAR1"):
            # Parquet on a pipe (`--data -`) or in a gzip file has no name that says so; the
            # readers tell Parquet by its suffix ("rename it so" could not be done to a pipe).
            target = target.rename(target.with_name(target.name + ".parquet"))
        register_copy(target, shown)
        try:
            yield target
        except InputError as exc:
            if exc.source == str(target) or exc.source.startswith(str(target)):
                raise InputError(shown + exc.source[len(str(target)):], exc.row, exc.problem) from None
            raise
        finally:
            forget_copy(target)


#: Compressed files and archives the readers do not open, by their first bytes: (magic, what, how to read it).
OTHER_COMPRESSION: tuple[tuple[bytes, str, str], ...] = (
    (b"BZh", "bzip2-compressed", "bzip2 -dk {file}, then give the decompressed file"),
    (b"\xfd7zXZ\x00", "xz-compressed", "xz -dk {file}, then give the decompressed file"),
    (b"\x04\x22\x4d\x18", "lz4-compressed", "lz4 -d {file}, then give the decompressed file"),
    (b"PK\x03\x04", "a zip archive", "unzip {file}, then give the extracted file or folder"),
    (b"PK\x05\x06", "an empty zip archive", "it holds no file; give the history file itself"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x {file}, then give the extracted file or folder"),
)
#: Workbooks of a spreadsheet (zip files) by their suffix.
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".ods")


def _refuse_unreadable(path: Path, shown: str, *, decompressed: bool = False) -> None:
    """:class:`InputError` for a file whose first bytes show a kind the readers do not take.

    A bzip2, xz or zip file (or a spreadsheet workbook, or UTF-16 text as
    Excel's "Unicode Text" writes it) was refused as "row 1: not a UTF-8 text
    file", or its header shown with a NUL between every two characters:
    neither says what the file is nor what to do.
    """
    with open(path, "rb") as fh:
        head = fh.read(512)
    file = "FILE" if shown == "<stdin>" else shown
    if head[257:262] == b"ustar":
        member = _tar_member(path)
        how = (f"tar -xf {file} {member}, then give {member}" if member
               else f"tar -xf {file}, then give the extracted file or folder")
        raise InputError(shown, None, f"is a tar archive; extract the history from it first ({how})")
    if decompressed:
        file = "<the decompressed file>"
    # by content: a web export named .xls is often text, and read as such
    if head.startswith(b"\xd0\xcf\x11\xe0") or head.startswith(b"PK\x03\x04") and (
        path.suffix.lower() in WORKBOOK_SUFFIXES or b"[Content_Types].xml" in head or b"mimetype" in head
    ):
        raise InputError(shown, None, "is a spreadsheet workbook, not a text file: save the sheet as 'CSV UTF-8' "
                         "(comma-delimited) and give that file")
    for magic, what, how in OTHER_COMPRESSION:
        if head.startswith(magic):
            if magic == b"BZh" and not (head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90")):
                continue  # a header that starts "BZh" (bzip2's block or end-of-stream magic follows its level)
            if magic == b"PK\x03\x04" and (member := _zip_member(path)):
                how = f"unzip {{file}} {member}, then give {member}"
            raise InputError(shown, None, f"is {what}; only gzip and zstd files are decompressed: "
                             f"{'extract' if 'archive' in what else 'decompress'} it first ({how.format(file=file)})")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or _utf16_without_bom(head):
        raise InputError(shown, None, "is UTF-16 text (Excel's 'Unicode Text' export, or a Windows tool's?); only "
                         f"UTF-8 is read: convert it (iconv -f UTF-16 -t UTF-8 {file} > converted{_text_suffix(path)}), "
                         "or in Excel save it as 'CSV UTF-8'")


def _text_suffix(path: Path) -> str:
    """The suffix a converted copy of ``path`` keeps (``.json`` stays JSON), ``.csv`` by default."""
    suffix = path.suffix.lower()
    return suffix if suffix in (".csv", ".tsv", ".txt", ".json", ".jsonl", ".js", ".yaml", ".yml") else ".csv"


def _starts_with(path: Path, magic: bytes) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(magic)) == magic


def _zip_member(path: Path) -> str:
    """The name of a zip archive's one file (what to extract), else "" (several, or none readable)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = [i.filename for i in archive.infolist() if not i.is_dir()]
    except (OSError, zipfile.BadZipFile, ValueError):
        return ""
    return names[0] if len(names) == 1 and names[0].isprintable() and " " not in names[0] else ""


def _tar_member(path: Path) -> str:
    """The name of a tar archive's one file (what to extract), else "" (several, or none readable)."""
    import tarfile

    try:
        with tarfile.open(path) as archive:
            names = [m.name for m in archive.getmembers() if m.isfile()]
    except (OSError, tarfile.TarError, EOFError):
        return ""
    return names[0] if len(names) == 1 and names[0].isprintable() and " " not in names[0] else ""


def _utf16_without_bom(head: bytes) -> bool:
    """ASCII text written as UTF-16 without a byte-order mark: a NUL beside every character."""
    if len(head) < 8:
        return False
    pairs = len(head) // 2 * 2
    for zeros, chars in ((head[1:pairs:2], head[0:pairs:2]), (head[0:pairs:2], head[1:pairs:2])):
        if not zeros.strip(b"\x00") and all(32 <= c < 127 or c in b"\t\r\n" for c in chars):
            return True
    return False


def non_utf8_line(path: str | Path) -> int | None:
    """The 1-based line (``\\n``-separated) of the first byte that is not UTF-8; None when all is UTF-8.

    The offsets in a :class:`UnicodeDecodeError` from a text reader are within
    whatever buffer it was decoding (pandas' or ``readline``'s 8 KiB), not
    the file, so the line is found again here, one chunk at a time (memory
    stays at :data:`UTF8_CHUNK` whatever the file's size).
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines_before = 0  # newlines in the chunks decoded so far
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(UTF8_CHUNK)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                # exc.object is the bytes the decoder held back from the last chunk (the
                # start of a character cut by the chunk's end: never a newline), then this chunk.
                return lines_before + exc.object[: exc.start].count(b"\n") + 1
            if not chunk:
                return None
            lines_before += chunk.count(b"\n")


#: Binary files a user may give where a history belongs, by their first bytes: what to say instead.
KNOWN_BINARY: tuple[tuple[bytes, str], ...] = (
    (b"SQLite format 3\x00", "an SQLite database (a `triage watch --state` store or a `triage serve` labels "
                             "store?), not a history"),
    (b"PAR1", "a Parquet file whose name does not end in .parquet: rename it so"),
)


def not_utf8(path: str | Path, shown: str | Path | None = None) -> InputError:
    """The :class:`InputError` for a file that is not UTF-8, located at its first bad byte's line.

    A file that starts as one of :data:`KNOWN_BINARY` is named for what it is.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        head = b""
    for magic, what in KNOWN_BINARY:
        if head.startswith(magic):
            if magic == b"PAR1" and Path(path).suffix.lower() == ".parquet":
                # named so already: an input read as text only (candidates, decisions), not a history
                what = "a Parquet file, and only a history (--data) is read from Parquet: give this input as CSV"
            return InputError(path if shown is None else shown, None, f"is {what}")
    name = path if shown is None else shown
    return InputError(
        name, non_utf8_line(path),
        "not a UTF-8 text file (a Windows or Latin-1 export, e.g. Excel's plain 'CSV'? save it as 'CSV UTF-8', "
        "or convert it: iconv -f CP1252 -t UTF-8 <file> > converted.csv)",
    )


#: pandas' words for a row of more cells than the header, with the line inside them.
_RAGGED = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
#: pandas' words for a quote never closed, with the line counted from 0 (the header's is 0).
_OPEN_QUOTE = re.compile(r"EOF inside string starting at row (\d+)")


@contextmanager
def csv_errors(path: str | Path, shown: str | Path | None = None) -> Iterator[None]:
    """pandas' CSV reading errors inside the block as :class:`InputError` naming ``shown`` (default ``path``).

    A row of more cells than the header, and a quote never closed, are named by
    their line, as every error of the project names it (pandas put the line
    inside its own message: "Error tokenizing data. C error: Expected 3 fields
    in line 4, saw 4"; "EOF inside string starting at row 2", counting from 0).
    """
    name = path if shown is None else shown
    try:
        yield
    except pd.errors.EmptyDataError:
        raise InputError(name, None, "file is empty") from None
    except pd.errors.ParserError as exc:
        if ragged := _RAGGED.search(str(exc)):
            want, line, saw = ragged.groups()
            raise InputError(name, int(line), f"{saw} cells where the header has {want}") from None
        if quote := _OPEN_QUOTE.search(str(exc)):
            # pandas' "row 30" is the file's line 31: the user went to a line that was fine.
            raise InputError(name, int(quote.group(1)) + 1, 'a quote (") opened in this row is never '
                             "closed: the rest of the file would be one cell") from None
        raise InputError(name, None, f"not a valid CSV file: {exc}") from None
    except UnicodeDecodeError:
        raise not_utf8(path, shown) from None


def read_csv_text(
    path: Path, sep: str = ",", *, require_rows: bool = True, quotechar: str = '"'
) -> pd.DataFrame:
    """Every cell as text (no NaN guessing), stripped column names; located errors.

    A header naming a column twice is refused (:func:`check_header`).
    """
    with csv_errors(path):
        frame = pd.read_csv(
            path, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True, quotechar=quotechar
        )
    frame = without_implicit_index(frame, path, sep=sep, quotechar=quotechar)
    check_header(path, sep=sep, quotechar=quotechar)
    frame.columns = [str(c).strip() for c in frame.columns]
    if require_rows and frame.empty:
        raise InputError(path, None, "file has a header but no data rows")
    return frame


def without_implicit_index(
    frame: pd.DataFrame, path: str | Path, *, rows: np.ndarray | None = None, sep: str = ",", quotechar: str = '"'
) -> pd.DataFrame:
    """``frame`` as the header names its columns, when pandas read its rows' extra cells as an index.

    A CSV whose first data row has more cells than the header is read by
    pandas with the extra leading cells as the row index, every other column
    shifted left: a trailing separator on each row (``s1,c1,100.5,``) made
    the values blank, and a decimal comma in a comma-separated file
    (``s1,c1,100,5``) was read as the digits after the comma, the commit id
    as the series id, without a word. Extra cells that are all blank
    (trailing separators) are dropped; a row with a non-blank one is an
    :class:`InputError` at its line (``rows``: each record's line, as the
    caller counts them; default :func:`~triage.core.csv_lines.csv_record_lines`).
    """
    if isinstance(frame.index, pd.RangeIndex):
        return frame
    if _row_names(frame.index):
        # R's write.table (row.names = TRUE) writes a row number before each row and none in the header:
        # pandas' reading (the numbers as the index) is the right one there.
        return frame.reset_index(drop=True)
    levels = frame.index.nlevels
    names = list(frame.columns)
    cells = [frame.index.get_level_values(k).to_numpy() for k in range(levels)]
    cells += [frame.iloc[:, j].to_numpy() for j in range(len(names))]
    blank = np.ones(len(frame), dtype=bool)
    for extra in cells[len(names):]:
        blank &= pd.Series(extra, dtype=object).map(lambda v: v is None or v != v or not str(v).strip()).to_numpy(bool)
    if not blank.all():
        from triage.core.csv_lines import csv_record_lines

        i = int(np.flatnonzero(~blank)[0])
        line = rows[i] if rows is not None else csv_record_lines(Path(path), len(frame), sep, quotechar)[i]
        hint = (
            " (a decimal comma in a comma-separated file? write decimal points, or quote such values,"
            " or separate the cells with ';')" if sep == "," else ""
        )
        raise InputError(path, int(line), f"{len(names) + levels} cells where the header has {len(names)}{hint}")
    out = pd.DataFrame({j: cells[j] for j in range(len(names))})
    out.columns = names
    return out


def trailing_blank_rows(frame: pd.DataFrame) -> int:
    """How many rows at the end of ``frame`` have no cell that is not blank (``;;;``: the empty rows a
    spreadsheet exports below its data once they were touched).

    Cheap when there are none (the last row is looked at first): it runs on every part of a long file.
    """
    def blank(cells: pd.DataFrame) -> np.ndarray:
        out = np.ones(len(cells), dtype=bool)
        for j in range(cells.shape[1]):
            column = cells.iloc[:, j]
            text = column.astype(str).str.strip().to_numpy()
            out &= column.isna().to_numpy() | (text == "")
        return out

    if not len(frame) or not blank(frame.iloc[-1:])[0]:
        return 0
    filled = np.flatnonzero(~blank(frame))
    return len(frame) - (int(filled[-1]) + 1 if len(filled) else 0)


def _row_names(index: pd.Index) -> bool:
    """An index of consecutive whole numbers (``"1"``, ``"2"``, ...): row names, as R writes them."""
    if index.nlevels != 1 or not len(index):
        return False
    text = pd.Series(index.astype(str)).str.strip()
    if not text.str.fullmatch(r"\d{1,18}").all():
        return False
    numbers = text.astype(np.int64).to_numpy()
    return bool((np.diff(numbers) == 1).all()) and (len(numbers) > 1 or numbers[0] == 1)


def header_names(path: str | Path, sep: str = ",", *, quotechar: str = '"') -> list[str]:
    """The header's column names as written, stripped (pandas renames a repeated name: ``value``, ``value.1``)."""
    with csv_errors(path):
        first = pd.read_csv(
            path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False, skipinitialspace=True,
            quotechar=quotechar,
        )
    return [str(c).strip() for c in first.iloc[0]] if len(first) else []


def check_header(
    path: str | Path, sep: str = ",", *, quotechar: str = '"', names: list[str] | None = None, row: int | None = 1
) -> None:
    """Refuse a header that names a column more than once: :class:`InputError` at ``row`` (a CSV's line 1).

    pandas would read such a CSV without a word (the second ``value``
    becomes ``value.1``, or two columns answer to one name after stripping),
    so which one a reader takes would be an accident. Blank names (a trailing
    delimiter) are not names. ``names``: the column names as written, when the
    caller has them (a Parquet schema: ``row=None``); else the CSV header of
    ``path`` (:func:`header_names`).
    """
    if names is None:
        names = header_names(path, sep, quotechar=quotechar)
        for position, name in enumerate(names, start=1):
            if "\n" in name or "\r" in name:
                # A quote opened in the header and never closed takes the lines below into one name:
                # the columns were "missing", with the whole file printed as the name found.
                raise InputError(
                    path, row, f"column {position}'s name {name[:30]!r}... runs over several lines:"
                    f" a {quotechar} in the header that is not closed?",
                )
    positions: dict[str, list[int]] = {}
    for position, name in enumerate(names, start=1):
        if name:
            positions.setdefault(name, []).append(position)
    repeated = [
        f"{name!r} (columns {', '.join(map(str, where[:-1]))} and {where[-1]})"
        for name, where in positions.items() if len(where) > 1
    ]
    if repeated:
        raise InputError(
            path, row,
            f"column{'s' if len(repeated) > 1 else ''} {' and '.join(repeated)}"
            f" {'are' if len(repeated) > 1 else 'is'} named more than once: which one to read?",
        )


#: Thousands grouped by commas with an optional decimal point (``1,234.5``): the one locale spelling a
#: comma-separated file holds (quoted); a quoted ``0,1`` there is more likely a list than a number.
_COMMA_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def nan_cells(col: pd.Series) -> np.ndarray:
    """Which cells of a text column are spelled ``nan`` (any case, a sign allowed): a missing value.

    The one rule of the readers whose cells may be absent (an Otava CSV's
    empty cell, asv's ``null`` or ``NaN``): such a cell is skipped like an
    empty one. In the long layout a row is one value, so an empty or ``nan``
    value is refused at its row there.
    """
    return col.astype(str).str.strip().str.fullmatch(r"[+-]?nan", case=False).to_numpy(dtype=bool)


def looks_numeric(col: pd.Series, sep: str = ",") -> bool:
    """Mostly numbers: a metric (its odd bad cell is then reported, not hidden).

    A number written with a locale's separators (``4,948`` in a ``;``-separated file, ``1.234,5``;
    ``1,234.5`` in any) counts: a column of them is a metric whose cells are refused naming their
    row (:func:`locale_hints`), not a text attribute left out without a word. Empty and ``nan``
    cells (:func:`nan_cells`) are missing values, neither numbers nor text.
    """
    text = col.astype(str).str.strip()
    text = text[(text != "").to_numpy() & ~nan_cells(text)]
    if not len(text):
        return False
    numbers = pd.to_numeric(text, errors="coerce").notna()
    if float(numbers.mean()) >= 0.5:
        return True

    def spelled(cell: str) -> bool:
        return locale_number(cell) is not None and (sep != "," or bool(_COMMA_THOUSANDS.fullmatch(cell)))

    return float((numbers | text.map(spelled)).mean()) >= 0.5


@contextmanager
def locale_hints(cells: pd.Series, rows: np.ndarray | None = None) -> Iterator[None]:
    """A value refused as "not a number" inside the block, when written with a locale's separators, says so.

    ``cells``: the frame's value column as read (text); ``rows``: each cell's
    row as the error names it (default: 1-based positions). The one
    validator (:func:`triage.core.history.dataset_from_long`) only knows it
    is no number; which way to write it is the reader's to say.
    """
    try:
        yield
    except InputError as exc:
        if exc.row is None or not exc.problem.startswith("value ") or "is not a number" not in exc.problem:
            raise
        where = np.arange(1, len(cells) + 1) if rows is None else np.asarray(rows)
        for i in np.flatnonzero(where == exc.row):
            text = str(cells.iloc[i]).strip()
            if repr(text) in exc.problem and (problem := locale_number(text)) is not None:
                raise InputError(exc.source, exc.row, problem) from None
        raise


