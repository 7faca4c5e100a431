"""Text from evidence (file names, topic names, keys, values) shown to a person: control and
format characters made visible as escapes.

A raw NUL, a newline in a directory name or U+202E (right-to-left override) copied into a
terminal line or an HTML page hides or reorders what is around it: a file name that seems to
say one thing and is another, one error that reads as two lines. Every human output of
segtools passes its evidence text through :func:`visible` (terminal) or :func:`html_text`
(HTML) at the point where text becomes output. Machine outputs (JSON, Parquet) keep the
exact strings, and dump's Kafka-identical text is not touched (kafka-dump-log prints names
raw).

Escaped: categories Cc (C0, DEL, C1 controls), Cf (format: bidi overrides and isolates,
zero-width characters, BOM, soft hyphen), Zl/Zp (U+2028/9 line and paragraph separators)
and lone surrogates (a non-UTF-8 byte kept by ``surrogateescape`` shows as ``\\xNN``).
``\\t``, ``\\n``, ``\\r`` as such, other characters below U+0100 as ``\\xNN``, the rest as
``\\uNNNN`` / ``\\UNNNNNNNN``. A backslash stays a backslash (paths stay readable), so the
escapes are for reading, not for parsing back.
"""

from __future__ import annotations

import html
import unicodedata

__all__ = ["visible", "visible_lines", "html_text"]

_ESCAPED_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:       # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with control and format characters as visible escapes (one line, always)."""
    if text.isprintable():             # the common case: nothing to look at per character
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in _ESCAPED_CATEGORIES else ch
                   for ch in text)


def visible_lines(text: str) -> str:
    """:func:`visible` for each line of a multi-line text of ours (a table): its own line
    breaks stay, every other control character in it is escaped."""
    return "\n".join(visible(line) for line in text.split("\n"))


def html_text(text: str) -> str:
    """``text`` for HTML text or a quoted attribute value: :func:`visible`, then ``& < > " '``
    escaped."""
    return html.escape(visible(text), quote=True)
