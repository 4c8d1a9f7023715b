"""The command line's one boundary: option checks before work, and the last word on errors.

Option checks
    Each ``check_*`` function takes an option's value and its spelling
    (``"--test-size"``) and returns the value or raises ``typer.BadParameter``
    naming the option (click prints it and exits 2). Commands call them first
    thing, so that a bad option fails in a second, not after minutes of
    feature extraction or training, and never after writing anything.

Outputs
    :func:`check_output_not_input` refuses an output path that is, or resolves
    to, one of the command's inputs (``--out`` equal to ``--data``), before
    anything is read.

Errors
    :func:`exit_code_for` is what :func:`triage.cli.app.main` does with an
    exception that escaped a command: an operating-system error naming a file
    (full disk, read-only folder, permission) is one line and exit 2, like an
    :class:`~triage.core.errors.InputError`; anything else is an internal
    error: one line with the exception's type, the version, and the file the
    full traceback was written to, exit 1. Never a raw traceback on the
    terminal.
"""

from __future__ import annotations

import math
import os
import tempfile
import traceback
from pathlib import Path

import typer

#: Where internal errors' tracebacks go, unless ``TRIAGE_ERROR_LOG`` says otherwise.
ERROR_LOG_NAME = "triage-errors-{uid}.log"


# ---------------------------------------------------------------------- option checks


def check_number(option: str, value: float | None, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False) -> float | None:
    """``value`` if it is a finite number in the range; ``None`` passes (option not given).

    ``low_open`` / ``high_open`` exclude the bound itself.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value!r}", param_hint=option)
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    span = f"{lo}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{hi}"
    if low is not None and (value < low or (low_open and value == low)):
        raise typer.BadParameter(f"must be in {span}, got {value:g}", param_hint=option)
    if high is not None and (value > high or (high_open and value == high)):
        raise typer.BadParameter(f"must be in {span}, got {value:g}", param_hint=option)
    return value


def check_int(option: str, value: int | None, *, low: int | None = None, high: int | None = None,
              allow: tuple[int, ...] = ()) -> int | None:
    """``value`` if it is an int in [low, high] or one of ``allow`` (e.g. -1 = all cores for ``--n-jobs``)."""
    if value is None or value in allow:
        return value
    if (low is not None and value < low) or (high is not None and value > high):
        extra = f" (or {', '.join(map(str, allow))})" if allow else ""
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise typer.BadParameter(f"must be {bounds}{extra}, got {value}", param_hint=option)
    return value


def check_n_jobs(value: int, option: str = "--n-jobs") -> int:
    """A joblib process count: >= 1, or -1 for all cores (0 means nothing to joblib)."""
    check_int(option, value, low=1, allow=(-1,))
    return value


def check_choice(option: str, value: str, choices: tuple[str, ...] | list[str]) -> str:
    if value not in choices:
        raise typer.BadParameter(f"must be one of {', '.join(choices)}, got {value!r}", param_hint=option)
    return value


def check_aggregation(aggregate: str, trim_warmup: str) -> None:
    """``--aggregate`` and ``--trim-warmup`` checked as options (else loading blamed the data file for them)."""
    from triage.core.history import AGGREGATES
    from triage.steady_state import CHOICES

    check_choice("--aggregate", aggregate, tuple(AGGREGATES))
    check_choice("--trim-warmup", trim_warmup.strip().lower(), CHOICES)


def check_names(option: str, text: str, choices: tuple[str, ...] | list[str]) -> list[str]:
    """A comma-separated list of names from ``choices``, at least one."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise typer.BadParameter(f"give at least one of {', '.join(choices)}", param_hint=option)
    for name in names:
        check_choice(option, name, choices)
    return names


def check_threshold_policy(option: str, spec: str) -> str:
    """A threshold policy text (``0.5``, ``recall:0.9``, ``fbeta:2``) that parses and is in range."""
    from triage.training.thresholds import parse_policy

    try:
        parse_policy(spec)  # its ranges too: nan, inf and values outside are refused there
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None
    return spec


#: Model parameters holding one value per feature column (XGBoost's constraints).
PER_COLUMN_PARAMS = frozenset({"monotone_constraints", "interaction_constraints", "feature_weights"})


def check_model_params(option: str, model: str, params: dict[str, object]) -> dict[str, object]:
    """``--param`` items the model kind accepts, with values its estimator takes.

    Builds (does not fit) the estimator once, so that an unknown name or a
    negative number of trees fails now, naming the parameter.
    """
    from triage.training.model_kinds import kind_of

    per_column = sorted(PER_COLUMN_PARAMS & set(params))
    if per_column:
        # one value per feature column, in the matrix's column order, which the
        # command line cannot spell; XGBoost failed on a scalar deep in fit
        raise typer.BadParameter(
            f"{model}: {', '.join(per_column)} takes one value per feature column, not a --param value; "
            "train with --monotone-shifts to hold the shift-size columns monotone",
            param_hint=option,
        )
    kind = kind_of(model)
    try:
        estimator = kind.build({**kind.defaults, **params}, class_weight=None, random_state=0, n_jobs=1)
        inner = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
        # scikit-learn's own range checks, without fitting; XGBoost inherits the
        # method but declares no constraints, so it is checked when it fits.
        if hasattr(inner, "_parameter_constraints"):
            inner._validate_params()
    except Exception as exc:  # TypeError (unknown name), InvalidParameterError (range): one line
        raise typer.BadParameter(f"{model}: {_first_line(exc)}", param_hint=option) from None
    return params


def check_input_path(option: str, path: Path | None, *, directory_ok: bool = True) -> Path | None:
    """An existing file (or directory, when allowed) to read; ``None`` passes."""
    if path is None or str(path) == "-":
        return path
    if not path.exists():
        raise typer.BadParameter(f"{path}: no such file or directory", param_hint=option)
    if path.is_dir() and not directory_ok:
        raise typer.BadParameter(f"{path}: is a directory, expected a file", param_hint=option)
    return path


def check_table_suffix(out: Path, writer: str, option: str = "--out") -> None:
    """Refuse an ``--out`` whose name the readers take for another layout (``convert``, ``labels export``,
    ``steady``; ``option`` names the option, e.g. ``--starts``).

    The writers write Parquet for ``.parquet`` and CSV for anything else
    (compressed by ``.gz`` / ``.zst``): ``x.parquet.gz`` became a gzipped CSV
    and ``x.json`` a CSV, files that ``triage`` itself then refused to read
    ("not valid JSON", "not a readable Parquet file"); ``x.jsonl`` a CSV named as JSON lines. ``writer`` names what
    writes, e.g. ``"convert writes a long CSV"``.
    """
    if str(out) == "-":
        return
    suffixes = [s.lower() for s in out.suffixes]
    compressed = bool(suffixes) and suffixes[-1] in (".gz", ".zst")
    kind = (suffixes[-2] if len(suffixes) >= 2 else "") if compressed else (suffixes[-1] if suffixes else "")
    if (compressed and kind == ".parquet") or kind in (".json", ".jsonl", ".ndjson", ".js", ".yaml", ".yml"):
        raise typer.BadParameter(f"{out.name}: {writer} (.csv, .csv.gz, .csv.zst) or an uncompressed .parquet",
                                 param_hint=option)


def check_text_table(out: Path | None, command: str) -> None:
    """Refuse a ``--out`` named ``.parquet`` for a command that writes CSV or JSON lines (``--format``).

    ``label --out l.parquet`` wrote CSV text under that name, without a word,
    and every reader then failed on it ("not a readable Parquet file").
    """
    if out is None or str(out) == "-":
        return
    suffixes = [s.lower() for s in out.suffixes]
    if ".parquet" in suffixes[-2:]:
        raise typer.BadParameter(f"{out.name}: {command} writes CSV or JSON lines (--format), not Parquet; name it "
                                 ".csv or .jsonl (`triage convert` writes a Parquet file of data)", param_hint="--out")


def check_folder_not_stdout(option: str, path: Path) -> None:
    """Refuse ``-`` for a folder: elsewhere it is standard output; here it made a folder named "-"."""
    if str(path) == "-":
        raise typer.BadParameter("a folder cannot be standard output ('-'): name a folder", param_hint=option)


def check_output_dir(option: str, path: Path) -> Path:
    """A directory to write into: absent (it will be made) or a directory, never a file."""
    check_folder_not_stdout(option, path)
    if path.exists() and not path.is_dir():
        raise typer.BadParameter(f"{path} exists and is not a directory", param_hint=option)
    check_not_in_model_dir(option, path)
    return path


def check_not_in_model_dir(option: str, path: Path | None) -> Path | None:
    """Refuse a path inside a model directory: one more file there and the model fails its checksums."""
    if path is None or str(path) == "-":
        return path
    from triage.training.model_dirs import enclosing_model_dir

    if (home := enclosing_model_dir(path)) is not None:
        raise typer.BadParameter(f"{path} is inside the model directory {home}, whose checksums would no longer "
                                 "cover its files; write it elsewhere", param_hint=option)
    return path


def output_file(value: str) -> Path:
    """Parse a file-valued ``--out``: a name ending in a path separator is a directory, never a file.

    ``Path("new/")`` drops the separator, so without this check a command
    asked to write into a folder would write a file named like the folder.
    """
    if value != "-" and value.endswith(("/", os.sep)):
        raise typer.BadParameter(f"{value!r} ends with a path separator, so it names a directory: give a file name")
    check_not_in_model_dir("--out", Path(value))
    from triage.core.atomic import check_folder_writable
    from triage.core.errors import InputError

    # A directory, a parent that is a file, a folder that takes no new file: refused now, not when
    # the result of minutes of work is about to be written. A BadParameter, not the InputError
    # itself: typer would wrap a ValueError's text as "Value error, <message>".
    try:
        check_folder_writable(value)
    except InputError as exc:
        raise typer.BadParameter(str(exc)) from None
    _refuse_a_store(Path(value))
    return Path(value)


def _refuse_a_store(path: Path) -> None:
    """A table written over a SQLite file would replace a watch state, a labels store or the
    MLflow tracking database (``--out state.db`` for ``state.csv``): no command writes one as --out."""
    from triage.core.atomic import SQLITE_MAGIC

    if not path.is_file():  # absent, or a device / pipe: written into, never replaced (and never opened here)
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError:  # unreadable: the write will say why
        return
    if head == SQLITE_MAGIC:
        raise typer.BadParameter(f"{path} is a SQLite database (a state, labels or tracking store?); "
                                 "refusing to replace it: give another file name")


def check_output_not_input(out: Path | str | None, *inputs: Path | str | None, option: str = "--out") -> None:
    """Refuse an output that is, or resolves to, one of ``inputs``.

    Symbolic links are followed on both sides, so ``--out link`` pointing at
    ``--data`` is refused as well. An input that is a directory (a dataset
    folder) covers the files already in it: writing over one of them could
    replace the data being read. ``-`` (stdin / stdout) is never the same file.
    """
    if out is None or str(out) == "-":
        return
    target = _resolved(Path(out))
    for given in inputs:
        if given is None or str(given) == "-":
            continue
        source = _resolved(Path(given))
        same = target == source or (source.is_dir() and Path(out).exists() and source in target.parents)
        if not same and Path(out).exists() and Path(given).exists():
            try:
                same = os.path.samefile(out, given)
            except OSError:
                same = False
        if same:
            raise typer.BadParameter(f"{out} is an input of this command ({given}); refusing to overwrite it",
                                     param_hint=option)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare the spelling
        return path.absolute()


# ---------------------------------------------------------------------- errors


def error_log_path() -> Path:
    """``$TRIAGE_ERROR_LOG``, else ``triage-errors-<uid>.log`` in the temporary folder.

    One file per user: with one name for everybody, the file the first user
    made kept every other user's tracebacks out.
    """
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(os.environ.get("TRIAGE_ERROR_LOG") or Path(tempfile.gettempdir()) / ERROR_LOG_NAME.format(uid=uid))


def exit_code_for(exc: BaseException, print_line) -> int:
    """Report an exception that escaped a command with ``print_line(text)``; return the exit code.

    OSError with a file name (disk full, read-only, permission denied): the
    user can fix it, so one line naming the file, exit 2. Everything else is
    our bug: one line, the version, and where the traceback was written, exit 1.
    """
    if isinstance(exc, OSError) and (exc.filename is not None or exc.errno is not None):
        where = f"{exc.filename}: " if exc.filename is not None else ""
        reason = exc.strerror or str(exc)
        print_line(f"error: {where}{reason}")
        return 2
    log = error_log_path()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        # The default name in a shared temporary folder is predictable: never follow a link planted there.
        follow = 0 if os.environ.get("TRIAGE_ERROR_LOG") else getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | follow, 0o600)
        with open(fd, "a", encoding="utf-8") as fh:
            fh.write(f"--- triage {version()} pid {os.getpid()}\n")
            fh.write("".join(traceback.format_exception(exc)))
        logged = f"the traceback is in {log}"
    except OSError as write_error:
        logged = f"the traceback could not be written to {log} ({write_error.strerror})"
    print_line(
        f"internal error: {type(exc).__name__}: {_first_line(exc)} "
        f"(triage {version()}); {logged}; please report it"
    )
    return 1


def version() -> str:
    from triage.core.versions import package_version

    return package_version()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 300 else line[:290] + "..."


def _sniffed_layout(data: Path) -> str | None:
    """The layout ``load(data)`` would read (None for standard input, which is read once, by the loader)."""
    from triage.core.atomic import is_stdio
    from triage.loaders import DATASET_FILES
    from triage.readers.source import plain_file
    from triage.sniffing import data_layout

    if is_stdio(data):
        return None
    if data.is_dir():
        # a folder `triage synth` wrote is read as its history file, as load does
        inside = next((data / name for name in DATASET_FILES if (data / name).exists()), None)
        if inside is None:
            return data_layout(data)
        data = inside
    with plain_file(data) as plain:
        return data_layout(plain)


def check_option_applies(option: str, data: Path, layout: str, given: object, applies_to: tuple[str, ...],
                         what: str) -> None:
    """Refuse ``option`` (a usage error naming it) when ``data`` is read in a layout it does not apply to.

    The loader passes ``--alerts`` to the Perfherder reader and
    ``--commit-order`` to the long and JSON-lines readers only; every other
    reader ignored them without a word: a long CSV or a data.js with
    ``--alerts`` was read unlabelled (``convert`` wrote "training data" with
    no label), an asv folder with ``--commit-order`` kept its own order.
    """
    if given is None or layout in applies_to:
        return
    found = _sniffed_layout(data) if layout == "auto" else layout
    if found is None or found in applies_to:
        return
    raise typer.BadParameter(f"it applies to {what} only; {data} is read as {found} data", param_hint=option)
