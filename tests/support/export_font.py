"""Which characters the exports' font lacks, found by drawing them. vl-convert has none of
charts.theme.FONT's families but its own Liberation Sans, and a line of text holding a character
that font lacks is drawn whole in a fallback font (a serif): so a probe word followed by the
character keeps the probe's pixels exactly where the font has it."""

import io

import numpy as np
import vl_convert as vlc
from PIL import Image

from charts.theme import FONT

PROBE = "Hag "     # round, straight and descending strokes: any other font draws them otherwise
ROW_PX, SIZE_PX = 40, 24


def lacking(characters: set[str]) -> set[str]:
    """The characters the exports' font has no glyph for (one render for all of them)."""
    chars = sorted(characters)
    texts = [PROBE, *(PROBE + c for c in chars)]
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "width": 400, "height": ROW_PX * len(texts), "config": {"view": {"stroke": None}},
            "data": {"values": [{"text": t, "y": (i + 0.5) * ROW_PX} for i, t in enumerate(texts)]},
            "mark": {"type": "text", "font": FONT, "fontSize": SIZE_PX, "align": "left",
                     "baseline": "middle"},
            "encoding": {"text": {"field": "text"}, "x": {"value": 4},
                         "y": {"field": "y", "type": "quantitative", "scale": None}}}
    ink = np.asarray(Image.open(io.BytesIO(vlc.vegalite_to_png(spec, scale=1))).convert("L")) < 250
    rows = [ink[i * ROW_PX:(i + 1) * ROW_PX] for i in range(len(texts))]
    probe_end = np.flatnonzero(rows[0].any(axis=0)).max() + 2   # the probe's last inked column
    return {c for c, row in zip(chars, rows[1:])
            if not np.array_equal(row[:, :probe_end], rows[0][:, :probe_end])}


def drawn_text(scenegraph) -> list[str]:
    """Every text a rendered figure draws (titles, subtitles, axes, legends, text marks), from
    vl-convert's scenegraph."""
    out: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            text = node.get("text")
            if isinstance(text, str):
                out.append(text)
            elif isinstance(text, list):
                out.extend(str(line) for line in text)
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(scenegraph)
    return out
