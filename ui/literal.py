"""Text from outside the app (a link's values, an uploaded file's name and cells) shown as
written, never as markup: the one escaping helper every page, note, caption, tooltip and error
uses for such text. Pure Python (no Streamlit), so it is unit-tested on its own.

Streamlit renders every message, caption, label and tooltip as Markdown (GitHub's flavour plus
its own `:red[...]` colours, `:material/...:` icons, `:emoji:` codes and arrows), so a stranger's
link could otherwise draw a heading, a link, or an image fetched from another site. A backslash
before every ASCII punctuation character stops the Markdown syntax. Some rewrites happen on the
text after that syntax is read, where a backslash no longer counts: web and e-mail addresses
become links (`www.`, `https://`, `a@b.co`), emoji codes pictures (`:name:`), `:material/` an
icon, ` -- ` and ` -> ` a dash and an arrow. Every one of them starts or ends at punctuation, so
an invisible word joiner (U+2060) before each punctuation character breaks them all. Control and
format characters (a line break would start a new block, a right-to-left override reorders what
follows) are shown as their escapes (`\\n`, `\\u202e`), and a long value is cut, saying how
long it was.
"""

from __future__ import annotations

import string
import unicodedata

LIMIT = 60                       # characters of a value shown; the rest is counted, not shown
JOINER = "\u2060"                # WORD JOINER: invisible, never a line break
PUNCTUATION = frozenset(string.punctuation)   # every character Markdown may give a meaning to
INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})   # controls, formats, surrogates, separators


def visible(text: str) -> str:
    """`text` with every control or format character spelled as its escape (a line break as
    `\\n`), so a value can neither start a new line nor hide or reorder characters."""
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in INVISIBLE else ch for ch in text)


def literal(value: object, limit: int | None = LIMIT) -> str:
    """Markdown that shows `str(value)` as written, as plain text (for any Streamlit element
    that renders Markdown; not inside a code span, where the backslashes would show). A value
    longer than `limit` characters is cut there, with its length after it (`limit=None`: a
    whole message that quotes values, each already cut)."""
    text = str(value)
    cut = limit is not None and len(text) > limit
    shown = visible(text[:limit] if cut else text)
    escaped = "".join(JOINER + "\\" + ch if ch in PUNCTUATION else ch for ch in shown)
    if escaped.startswith(" "):   # four spaces at the start of a line would make a code block
        escaped = JOINER + escaped
    return f"{escaped}… ({len(text):,} characters)" if cut else escaped
