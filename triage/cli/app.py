"""The ``triage`` command line.

Each group of commands lives in its own ``triage.cli.<group>`` module that
exposes ``register(app)``; this module only assembles them, so that adding a
command never means editing another command's code. Shared option parsers are
in :mod:`triage.cli.options`, the rich tables in :mod:`triage.cli.tables`.
"""

from __future__ import annotations

import errno
import importlib
import os
import signal
import sys
import warnings
from typing import NoReturn

import typer
from rich.console import Console

from triage.cli.tables import error_line
from triage.core.errors import InputError

app = typer.Typer(
    name="triage",
    help="Learn and apply the triage of performance change-point alerts.",
    no_args_is_help=True,
    # `triage --install-completion` / `--show-completion` (bash, zsh, fish, PowerShell).
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version() -> str:
    from triage.core.versions import package_version

    return package_version()


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"triage (changepoint-triage) {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Learn and apply the triage of performance change-point alerts."""


# Order here is the order of `triage --help`.
COMMAND_MODULES: list[str] = [
    "triage.cli.data",
    "triage.cli.detectors",
    "triage.cli.features",
    "triage.cli.training",
    "triage.cli.online",
    "triage.cli.alerts",
    "triage.cli.pipeline",
    "triage.cli.workspace",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)

err_console = Console(stderr=True)


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning from the library (a skipped series, unsorted timestamps) as one line on stderr.

    Python's default shows the library's source file and line, which tells a
    user nothing about their input.
    """
    err_console.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)


#: Exit status when the reader of our output went away (``triage ... | head -1``): 128 + SIGPIPE,
#: what a shell reports for ``cat``, ``grep`` or ``yes`` stopped the same way. Not 0: the output
#: *was* cut short, and ``set -o pipefail`` scripts must see that as they do for coreutils; not
#: 1 or 2, which say "our bug" and "bad input". An exit with the number rather than death by
#: the signal, so that ``finally`` blocks run first: temporary files are removed, stores close
#: their transactions.
BROKEN_PIPE_EXIT = 128 + 13


def _is_broken_pipe(exc: BaseException) -> bool:
    """EPIPE, or click's ``sys.exit(1)`` in answer to one (raised while handling it, so its context)."""
    if isinstance(exc, SystemExit):
        exc = exc.__context__  # type: ignore[assignment]
    return isinstance(exc, OSError) and exc.errno == errno.EPIPE


def _silence_standard_streams() -> None:
    """Point stdout and stderr at /dev/null: what is still buffered for the gone reader is
    flushed there at exit, instead of an "Exception ignored ... BrokenPipeError" message."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):  # no descriptor (an embedding host): nothing is flushed there
            pass
    os.close(devnull)


def _report(exc: Exception) -> int:
    """One line on stderr for an exception that escaped a command; the exit code."""
    if isinstance(exc, InputError):
        from triage.model_lookup import registry_address

        if (uri := registry_address(exc.source)) is not None:
            # Named by the address given, the registry's copy beside it (a cache folder alone said nothing).
            exc = InputError(f"{uri} (its copy {exc.source})", exc.row, exc.problem)
        err_console.print(error_line(exc), highlight=False, soft_wrap=True)
        if (note := _model_from_environment(exc)) is not None:
            err_console.print(note, markup=False, highlight=False, soft_wrap=True)
        return 2
    # OS errors: one line, exit 2; our bugs: internal error, exit 1
    from triage.cli.validation import exit_code_for

    def say(line: str) -> None:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)

    return exit_code_for(exc, say)


def _model_from_environment(exc: InputError) -> str | None:
    """A note when the model refused came from ``$TRIAGE_MODEL``, not from ``--model`` on the command line.

    One variable feeds every command that loads a model, and an online model
    (``watch``, ``detect``) is no scoring model (``score``, ``label``): the
    refusal named a bundled path and not the variable that chose it.
    """
    chosen = os.environ.get("TRIAGE_MODEL")
    given = any(a == "--model" or a.startswith("--model=") for a in sys.argv[1:])
    if not chosen or given:
        return None
    # Only for the model the variable names (not a --newest-model, nor a model folder another
    # option of a command that loads no model named).
    named = {os.path.realpath(os.path.expanduser(chosen))}
    from triage.model_lookup import DEFAULTS, bundled_model

    for name in DEFAULTS.values() if chosen.strip().lower() == "default" else (chosen,):
        try:
            named.add(os.path.realpath(bundled_model(name)))
        except Exception:  # noqa: BLE001 (no bundled model of that name: the path alone)
            pass
    from triage.model_lookup import REGISTRY_PREFIX

    from_registry = chosen.strip().startswith(REGISTRY_PREFIX) and exc.source.startswith(chosen.strip())
    if os.path.realpath(exc.source) not in named and not from_registry:
        return None
    return (f"note: the model came from $TRIAGE_MODEL={chosen}, which every command that loads a model reads; "
            "give --model, or unset it")


def _hold_closed_output_streams() -> bool:
    """Hold a closed stdout / stderr (``>&-``, ``2>&-``) on /dev/null; whether stdout was closed.

    A closed descriptor is the lowest free one: the next file a command opens
    (a state store, a model, an output's temporary file) would get number 1
    or 2, and whatever a library then writes to "stdout" would land in it.
    Python also leaves ``sys.stdout`` None, which every command's first line
    of output turned into an internal error.
    """
    stdout_closed = False
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, "w", closefd=False, encoding="utf-8"))  # noqa: SIM115 - lives as long as the process
        stdout_closed = stdout_closed or fd == 1
    return stdout_closed



class _Terminated:
    """SIGTERM (and SIGHUP) handled as Ctrl-C is: the signal's default action ended the process at
    once, so no ``finally`` ran, and a stop left a copy of the input in $TMPDIR (40 MB for the real
    histories), a half-written ``.<out>.tmp`` beside ``--out`` and a ``.report.tmp-*`` folder; a
    closed terminal (an ssh session dropped during an hours-long ``culprit`` backfill) lost the
    readings typed so far, which Ctrl-C and SIGTERM keep in ``--out``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.received = False
        self.signum = signal.SIGTERM

    def __call__(self, signum, frame) -> None:
        if os.getpid() != self.pid:
            # A forked worker (a pool's terminate() sends SIGTERM): the default action, as before.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.received = True
        self.signum = signum
        raise KeyboardInterrupt

    @property
    def exit_code(self) -> int:
        """The shell's status for the signal: 143 for SIGTERM, 129 for SIGHUP."""
        return 128 + int(self.signum)


def main() -> None:
    """Console entry point: bad input exits 2 with one readable line, not a traceback; a reader
    that went away (stdout's, or stderr's too) exits :data:`BROKEN_PIPE_EXIT` with nothing printed;
    SIGTERM (and SIGHUP, unless ignored as nohup does) ends a command as Ctrl-C does (cleanup runs), with
    exit status 128 + the signal (143, 129)."""
    warnings.showwarning = _warning_line
    # The commands tell their user things by UserWarning (alerts left unscored, re-runs merged):
    # messages, not faults, so PYTHONWARNINGS=error turned them into "internal error" exits.
    warnings.filterwarnings("default", category=UserWarning)
    for stream in (sys.stdout, sys.stderr):
        # A non-UTF-8 output encoding (PYTHONIOENCODING=latin-1) met the tables' "…" and ended the
        # command before it wrote anything: what the encoding lacks is shown as "?".
        try:
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass
    terminated = _Terminated()
    signal.signal(signal.SIGTERM, terminated)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:  # not under nohup, which ignores it on purpose
        signal.signal(signal.SIGHUP, terminated)
    if _hold_closed_output_streams():
        # as coreutils do (`ls >&-`: "write error: Bad file descriptor"): the output asked for cannot be written
        err_console.print("error: standard output is closed (>&-): nothing can be written to it; redirect it to a "
                          "file, or to /dev/null to discard it", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    code = 0
    try:
        try:
            app()
        finally:
            # While a broken pipe can still be handled, not in the interpreter's last flush.
            sys.stdout.flush()
    except SystemExit as exc:
        if terminated.received:
            sys.exit(terminated.exit_code)
        if not _is_broken_pipe(exc):
            if exc.code is not None and not isinstance(exc.code, int):
                raise  # sys.exit("message"): the interpreter prints it
            finish(exc.code or 0)
        code = BROKEN_PIPE_EXIT
    except KeyboardInterrupt:
        if terminated.received:
            sys.exit(terminated.exit_code)
        raise
    except Exception as exc:
        try:
            code = BROKEN_PIPE_EXIT if _is_broken_pipe(exc) else _report(exc)
        except OSError as printing:  # stderr's reader gone as well (``2>&1 | head -1``)
            if terminated.received:  # a closed terminal (SIGHUP): nowhere to say it
                code = terminated.exit_code
            elif not _is_broken_pipe(printing):
                raise
            else:
                code = BROKEN_PIPE_EXIT
        if terminated.received and code != BROKEN_PIPE_EXIT:
            # The signal turned into the command's own error on its way out (culprit's prompt:
            # "the input ended", its readings kept): the status still says the signal ended it.
            code = terminated.exit_code
    if code == BROKEN_PIPE_EXIT:
        _silence_standard_streams()
    finish(code)


def finish(code: int) -> NoReturn:
    """Exit with ``code`` as the interpreter's exit does, without tearing down the imported modules.

    The interpreter's steps before the teardown are taken as they are: wait for the threads, run
    the atexit functions (MLflow's, joblib's, temporary folders' finalizers, logging's flush),
    flush stdout and stderr. The teardown itself, freeing every module of pandas, scikit-learn and
    MLflow one object at a time, wrote nothing and took 0.1 s of a 0.5 s `summary` and 1.6 s of a
    6.4 s `train`. During those 1.6 s a Ctrl-C made a finished `train`, its model written and
    registered, exit 130 (a walkthrough, thirtieth session): the work is done, so from here Ctrl-C
    is ignored. A flush that fails takes the interpreter's exit, which reports it as it does.
    """
    import atexit
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not stream.closed:
            try:
                stream.flush()
            except Exception:
                sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    main()
