"""Java's ``new String(bytes, StandardCharsets.UTF_8)``: what kafka-dump-log's StringDecoder
prints for bytes that are not valid UTF-8 (tested against the JVM itself)."""

from __future__ import annotations


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def java_utf8_replace(src: bytes) -> str:
    """Java's ``new String(bytes, UTF_8)`` for malformed input (java.lang.String
    decodeUTF8_UTF16, JDK 11+). Valid UTF-8 decodes the same as Python's strict decoder, but
    the number of U+FFFD for a malformed sequence differs from Python's "replace" (e.g. an
    encoded surrogate ED A0 80 is one U+FFFD in Java, three in Python), and binary payloads
    must print exactly as kafka-dump-log prints them."""
    out: list[str] = []
    put = out.append
    repl = "\ufffd"
    sp, sl = 0, len(src)
    while sp < sl:
        b1 = src[sp]
        sp += 1
        if b1 < 0x80:
            put(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if sp < sl:
                b2 = src[sp]
                if _cont(b2):
                    put(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    sp += 1
                else:
                    put(repl)
                continue
            put(repl)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if sp + 1 < sl:
                b2, b3 = src[sp], src[sp + 1]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    put(repl)
                    # malformed3: skip b1 only, or b1 and b2 when b2 could continue it
                    sp += 0 if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    put(repl if 0xD800 <= c <= 0xDFFF else chr(c))
                    sp += 2
                continue
            if sp < sl and ((b1 == 0xE0 and (src[sp] & 0xE0) == 0x80) or not _cont(src[sp])):
                put(repl)
                continue
            put(repl)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if sp + 2 < sl:
                b2, b3, b4 = src[sp], src[sp + 1], src[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    put(repl)
                    # malformed4: how many bytes the bad sequence spans (1 to 3)
                    if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                            or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)):
                        pass
                    elif not _cont(b3):
                        sp += 1
                    else:
                        sp += 2
                else:
                    put(chr(uc))
                    sp += 3
                continue
            if b1 > 0xF4 or (sp < sl and (
                    (b1 == 0xF0 and not 0x90 <= src[sp] <= 0xBF)
                    or (b1 == 0xF4 and (src[sp] & 0xF0) != 0x80) or not _cont(src[sp]))):
                put(repl)
                continue
            sp += 1
            put(repl)
            if sp < sl and not _cont(src[sp]):
                continue
            break
        else:
            put(repl)
    return "".join(out)
