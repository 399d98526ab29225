"""Text from outside the app (a link's values, an uploaded file's name and cells) shown as
written, never as markup: the one escaping helper every page, note, caption, tooltip and error
uses for such text. Pure Python (no Streamlit), so it is unit-tested on its own.

Streamlit renders every message, caption, label and tooltip as Markdown (GitHub's flavour plus
its own `:red[...]` colours, `:material/...:` icons, `:emoji:` codes and arrows), so a stranger's
link could otherwise draw a heading, a link, or an image fetched from another site. A value is
therefore shown as a code span: Markdown reads nothing inside one (no emphasis, link, HTML or
math), and Streamlit's rewrites of web and e-mail addresses, emoji codes and arrows visit plain
text only, so the page shows, and a copy gives, exactly the value, with no character added. The
span's fence is one backtick longer than any run of backticks in the value. One rewrite happens
before Markdown is read, inside code spans too: Streamlit turns every `:material/` in the source
into `:material_` (its icon codes), so the span is split at that slash, which stands between two
spans as plain text. Control and format characters (a line break would end the span, a
right-to-left override reorders what follows) are shown as their escapes (`\\n`, `\\u202e`),
but for the joiners a script or an emoji sequence needs between two characters (Persian, Hindi,
👩‍💻), and a long value is cut, saying how long it was.
"""

from __future__ import annotations

import re
import unicodedata

LIMIT = 60                       # characters of a value shown; the rest is counted, not shown
INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})   # controls, formats, surrogates, separators
JOINERS = frozenset("\u200c\u200d")   # ZERO WIDTH NON-JOINER and JOINER: shown between characters
ICON_CODE = ":material"          # + "/": what Streamlit rewrites in the source, code spans too
BACKTICKS = re.compile("`+")


def visible(text: str) -> str:
    """`text` with every control or format character spelled as its escape (a line break as
    `\\n`), so a value can neither start a new line nor hide or reorder characters; a joiner
    between two characters shown as they are is kept (it only joins them)."""
    hidden = [unicodedata.category(ch) in INVISIBLE for ch in text]
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if hidden[i] and not (ch in JOINERS and 0 < i < len(text) - 1
                              and not hidden[i - 1] and not hidden[i + 1]) else ch
        for i, ch in enumerate(text))


def literal(value: object, limit: int | None = LIMIT) -> str:
    """Markdown that shows `str(value)` exactly as written (for any Streamlit element that
    renders Markdown): the value as code. A value longer than `limit` characters is cut there,
    with its length after it (`limit=None`: a whole message that quotes values, each already
    cut). An empty value is nothing at all: the quotes a note puts around it show it."""
    text = str(value)
    cut = limit is not None and len(text) > limit
    shown = visible(text[:limit] if cut else text)
    *before, last = shown.split(ICON_CODE + "/")
    spans = "/".join([*(code_span(part + ICON_CODE) for part in before), code_span(last)])
    return f"{spans}… ({len(text):,} characters)" if cut else spans


def code_span(text: str) -> str:
    """`text` (one line) as a Markdown code span that shows it exactly: fenced by more backticks
    than it holds in a row, and padded with a space each side (which the span drops) where it
    starts or ends with a backtick or starts and ends with a space."""
    if not text:
        return ""
    fence = "`" * (max(map(len, BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" or (
        text[0] == " " and text[-1] == " " and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"
