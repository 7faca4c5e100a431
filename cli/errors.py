"""Mapping of segtools errors to CLI exit codes (CONTRACT.md section 1): 0 clean, 1 findings,
2 unusable input or usage error; no traceback unless --debug."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from segtools.errors import SegtoolsError
from segtools.primitives.visible import visible

F = TypeVar("F", bound=Callable[..., Any])


class TroubleError(click.ClickException):
    """Input that could not be processed at all: exit code 2 (click's default would be 1)."""

    exit_code = 2


def handle_errors(func: F) -> F:
    """Turn SegtoolsError / OSError into a one-line message and exit code 2.

    The wrapped command may take a ``debug`` keyword; with it set, tracebacks are kept."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = bool(kwargs.get("debug"))
        try:
            return func(*args, **kwargs)
        except (SegtoolsError, OSError) as exc:
            if debug:
                raise
            # one line whatever the input: a newline or escape sequence in a file name is shown
            raise TroubleError(visible(str(exc))) from None
        except MemoryError as exc:   # pyarrow's ArrowMemoryError included
            if debug:
                raise
            raise TroubleError(f"out of memory ({type(exc).__name__}: {visible(str(exc)[:200]) or 'no detail'}); "
                               "free memory or give the command fewer inputs at once") from None
        except KeyboardInterrupt:  # pragma: no cover
            sys.stderr.write("interrupted\n")
            sys.exit(130)

    return wrapper  # type: ignore[return-value]
