"""The one error type users see for bad input."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad input, located: which file, which row, what is wrong.

    ``row`` is the 1-based line number in a text file (the header is line 1) or
    the 1-based record number in a binary table; ``None`` when the problem is
    about the file as a whole (empty, missing column).
    """

    def __init__(self, source: str | Path | None, row: int | None, problem: str):
        self.source = str(source) if source is not None else "<input>"
        self.row = row
        self.problem = problem
        where = self.source if row is None else f"{self.source}, row {row}"
        super().__init__(f"{where}: {problem}")

    def located(self, source: str | Path | None) -> InputError:
        """This error, named after ``source`` when it was raised without one (``<input>``).

        Checks deep in a computation (a feature matrix, a split) know no file;
        the command that read the file does.
        """
        if self.source != "<input>" or source is None:
            return self
        return InputError(source, self.row, self.problem)
