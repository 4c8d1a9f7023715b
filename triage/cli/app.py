"""The ``triage`` command line.

Each group of commands lives in its own ``triage.cli.<group>`` module that
exposes ``register(app)``; this module only assembles them, so that adding a
command never means editing another command's code. Shared option parsers are
in :mod:`triage.cli.options`, the rich tables in :mod:`triage.cli.tables`.
"""

from __future__ import annotations

import importlib
import sys
import warnings

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
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("changepoint-triage")
    except PackageNotFoundError:  # run from a checkout that was never installed
        import triage

        return getattr(triage, "__version__", "unknown")


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


def main() -> None:
    """Console entry point: bad input exits 2 with one readable line, not a traceback."""
    warnings.showwarning = _warning_line
    try:
        app()
    except InputError as exc:
        err_console.print(error_line(exc), highlight=False, soft_wrap=True)
        sys.exit(2)
    except Exception as exc:  # OS errors: one line, exit 2; our bugs: internal error, exit 1
        from triage.cli.validation import exit_code_for

        def say(line: str) -> None:
            err_console.print(line, markup=False, highlight=False, soft_wrap=True)

        sys.exit(exit_code_for(exc, say))


if __name__ == "__main__":
    main()
