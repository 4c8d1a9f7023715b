"""Running ``triage`` in-process through the same boundary as ``triage.cli.app.main``,
or in a fresh interpreter (:func:`run_triage`) as a user's shell runs it.

An InputError is a clear error (exit 2), an OS error naming a file is a clear
error (exit 2), anything else is an internal error (exit 1).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.cli.app import app
from triage.cli.validation import exit_code_for
from triage.core.errors import InputError

#: rich's box characters, blanked so that a wrapped message reads as one line.
BOX = str.maketrans({c: " " for c in "│╭╮╰╯─"})


def invoke(args: list[object], stdin: str | None = None) -> tuple[int, str]:
    """Exit code and all output of ``triage ARGS``, through main()'s boundary."""
    res = CliRunner().invoke(app, [str(a) for a in args], input=stdin)
    exc = res.exception
    if exc is None or isinstance(exc, SystemExit):
        return res.exit_code, res.output
    if isinstance(exc, InputError):
        return 2, f"{res.output}error: {exc}"
    lines: list[str] = []
    code = exit_code_for(exc, lines.append)
    return code, res.output + "\n".join(lines)


def invoke_apart(*args: object, stdin: str | bytes | None = None) -> subprocess.CompletedProcess:
    """``triage ARGS`` in this interpreter through main()'s boundary, stdout and stderr apart.

    The in-process twin of :func:`run_triage` (same result type), without its 2-5 s of
    imports: an InputError is one ``error:`` line on stderr and exit 2, anything else
    escaping the command is what ``main()`` makes of it (:func:`exit_code_for`). What
    needs a real process (signals, pipes closed or shared with a shell, the environment
    read at start-up, resource limits) keeps :func:`run_triage`.
    """
    res = CliRunner().invoke(app, [str(a) for a in args], input=stdin)
    code, stderr, exc = res.exit_code, res.stderr, res.exception
    if exc is not None and not isinstance(exc, SystemExit):
        if isinstance(exc, InputError):
            code, stderr = 2, f"{stderr}error: {exc}\n"
        else:
            lines: list[str] = []
            code = exit_code_for(exc, lines.append)
            stderr += "".join(f"{line}\n" for line in lines)
    return subprocess.CompletedProcess([str(a) for a in args], code, res.stdout, stderr)


def watch_apart(args: list[object], stdin: str | bytes | None = None) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``triage watch ARGS`` in this interpreter (:func:`invoke_apart`).

    Standard input has no file descriptor here, so ``watch`` reads it one line a batch: a check
    of what a real pipe's batches do needs the installed script.
    """
    done = invoke_apart("watch", *args, stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def flat(text: str) -> str:
    """``text`` as one line: rich's boxes and line wrapping removed."""
    return " ".join(text.translate(BOX).split())


def run_triage(*args: object, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``triage ARGS`` in a process of its own through ``main()``: exit code, stdout and stderr apart.

    The process is forked from one that has already imported the commands' libraries
    (:func:`warm_start.warm_triage`): a real process with real pipes, without 2-5 s of imports.
    """
    return subprocess.run(
        [*warm_triage(), *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )


def step_history(path: Path) -> Path:
    """A long CSV of one series ``s1``: 40 commits c0..c39, a step of +0.5 at c20; ``path`` returned."""
    rows = "".join(f"s1,c{i},{1.0 + 0.5 * (i >= 20) + 0.01 * (i % 3)}\n" for i in range(40))
    path.write_text("series_id,commit,value\n" + rows)
    return path


def make_unwritable(path: Path, request: pytest.FixtureRequest) -> None:
    """Make ``path`` (a file or a folder) unwritable for this user; as root, immutable; else skip."""
    mode = path.stat().st_mode
    path.chmod(0o555 if path.is_dir() else 0o444)
    request.addfinalizer(lambda: path.chmod(mode))
    if os.access(path, os.W_OK):  # root: permissions do not bind, the immutable attribute does
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("cannot make a file unwritable here (root without chattr +i)")
        request.addfinalizer(lambda: subprocess.run(["chattr", "-i", str(path)], capture_output=True))
    if os.access(path, os.W_OK):
        pytest.skip("cannot make a file unwritable here")
