"""Hostile text a stranger's link or file may carry, and what Markdown makes of text: the
payloads of the browser test (tests/browser/test_hostile_links_browser.py), the link fuzz
suite's cross product (tests/fuzz_app) and the escaping helper's unit test (tests/ui)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from ui.shell.controls import CONTROLS, NO_PAGE

# every key a link may carry that the app reads: the controls', and the missing page's
LINK_KEYS = [*CONTROLS, NO_PAGE]
PAYLOADS = {
    "pixel": "x` ![t](https://evil.example/pixel.png) `",          # an outside image
    "heading": "9`\n\n# Session expired\n\nLog in at evil.example",  # a heading of its own
    "link": "[Click here](//evil.example/login) [relative](side_by_side)",
    "html": ("<img src=https://evil.example/h.png><script>fetch('https://evil.example/s')"
             "</script><iframe src=https://evil.example/f></iframe><a href=//evil.example>a</a>"),
    "addresses": ("www.evil.example https://evil.example/a x@evil.example :material/home: "
                  ":red[red] :streamlit: :smile: -- -> <3"),
    "entities": "&lt;img src=https://evil.example/e.png&gt; &#x3C;b&#x3E; &amp;",
    "math": "$\\href{https://evil.example}{x}$ $$\\text{y}$$",
    "controls": "\x1b[2J\x07\u202eeulav\u2028\u0085\t\r\nend",
    "structure": "> quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n    code\n\n---\n\n1. one\n- two",
    "long": "A" * 300 + "![t](https://evil.example/long.png)",
}

MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# Streamlit 1.67 rewrites text after parsing (StreamlitMarkdown.*.js): GitHub's address links,
# its emoji and icon codes, its arrows and dashes.
REWRITES = {
    "address link": re.compile(r"(https?:\/\/|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I),
    "e-mail link": re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)"),
    "emoji or icon": re.compile(r":[\w+-]+:|:material/"),
    "arrow or dash": re.compile(r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)"),
}
# what Markdown may make that a page's own words put there, and a stranger's text must not
MARKUP = {"image", "link_open", "heading_open", "html_inline", "html_block", "code_block", "fence",
          "blockquote_open", "table_open", "hr", "ordered_list_open", "s_open", "em_open",
          "strong_open"}


def markup(markdown: str) -> list[str]:
    """What `markdown` draws besides text, in order: Markdown's elements (an image with its
    address) and the spots Streamlit's rewrites would turn into links, emoji or arrows."""
    drawn = []
    for token in MARKDOWN.parse(markdown):
        for t in (token, *(token.children or ())):
            if t.type in MARKUP:
                drawn.append(f"{t.type} {t.attrGet('src') or t.attrGet('href') or ''}".strip())
            if t.type == "text":
                drawn += [f"{name}: {m.group(0)}" for name, pattern in REWRITES.items()
                          for m in pattern.finditer(t.content)]
    return drawn
