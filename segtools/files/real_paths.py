"""``os.path.realpath`` for many paths in few folders.

``os.path.realpath`` looks at every component of every path it is given (six ``lstat`` calls
for ``/evidence/cluster/broker-1/orders-0``); a broker dir of thousands of partitions spent
~0.2 s of an export's start there. :class:`RealPaths` resolves each parent folder once and then
looks only at the last component, with the same answers."""

from __future__ import annotations

import os
import stat


class RealPaths:
    """A realpath function that remembers resolved parent folders; use one per operation
    (links that change while it lives are not seen again)."""

    def __init__(self) -> None:
        self._parents: dict[str, str] = {}

    def __call__(self, path: str | os.PathLike[str]) -> str:
        path = os.path.abspath(os.fspath(path))   # abspath also removes "." and ".."
        head, tail = os.path.split(path)
        if not tail:          # the root
            return os.path.realpath(path)
        real_head = self._parents.get(head)
        if real_head is None:
            real_head = self._parents[head] = os.path.realpath(head)
        candidate = os.path.join(real_head, tail)
        try:
            if stat.S_ISLNK(os.lstat(candidate).st_mode):
                return os.path.realpath(candidate)
        except OSError:
            pass              # as realpath: a name that does not exist is kept as written
        return candidate
