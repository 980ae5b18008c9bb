"""The project's own error types: each is worded for the user and names the file or config key
in its first line. A job prints these as one line (see logs.log_to); anything else is a bug and
keeps its traceback."""

from __future__ import annotations

import os


class ReproError(Exception):
    """A problem the user can act on; its message names the file or key first."""


class DataError(ReproError, ValueError):
    """A damaged, edited or unexpected file: the path, what was expected, what was found."""

    def __init__(self, path: str | os.PathLike, problem: str, hint: str = ""):
        self.path = str(path)
        super().__init__(f"{path}: {problem}" + (f"; {hint}" if hint else ""))
