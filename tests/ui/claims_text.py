"""How the claims tests read the lab's words: plain text as a reader sees it, and the patterns
for the times, sizes and counts it shows."""

from __future__ import annotations

import html
import re

STALL = 0.1
TIME = r"(\d[\d,]*(?:\.\d+)?(?:e[+-]\d+)? (?:s|ms|µs))(?!\w)"
SIZE = r"(\d[\d,]*(?:\.\d+)?(?:e[+-]\d+)? [kMGTP]?B)"


def plain(markdown: str) -> str:
    """The text as a reader sees it: no tags, no bold marks."""
    return html.unescape(re.sub(r"<[^>]+>|\*\*", "", markdown))



def seconds(shown: str) -> float:
    number, unit = shown.split()
    return float(number.replace(",", "")) * {"s": 1, "ms": 1e-3, "µs": 1e-6}[unit]



def number(shown: str) -> int:
    return 1 if shown == "one" else int(shown.replace(",", ""))
