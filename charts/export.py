"""Figures to files: PNG and SVG through vl-convert (no browser), and the figure's tables as tidy
CSV (one file per table; several tables in a zip). The GIF is charts.film's."""

from __future__ import annotations

import io
import re
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import vl_convert as vlc
from PIL import Image

from sim.errors import InputError

from .figure import Figure
from .theme import Look

# vl-convert keeps the GIL while it waits for its converter, and a call handing back its result can
# need the GIL (a garbage collection that runs a Python callback): two threads converting at once
# can deadlock. One conversion at a time; the GIF's pool still overlaps the Pillow work.
_CONVERTER = threading.Lock()


def convert(function, *args, **kwargs):
    """`function(*args, **kwargs)`, a vl-convert call, one at a time (above)."""
    with _CONVERTER:
        return function(*args, **kwargs)


PNG_SCALE = 2          # docs-ready: 2 px per CSS pixel


@dataclass(frozen=True)
class Scenario:
    """What an exported figure shows, for its caption and its file name."""
    gpu_id: str
    gpu: str          # names, as the lab shows them
    model_id: str
    model: str
    prompt: int       # tokens of the new prompt
    streams: int      # requests already streaming when it arrives
    budget: int       # tokens an iteration may carry
    mode: str         # the cost model
    tp: int = 1       # GPUs the model is sharded over
    context: int | None = None     # tokens each stream has cached (None: not an input)
    policies: tuple[str, ...] = ()  # the lanes' policies, top lane first, as links spell them
    more: tuple[tuple[str, object], ...] = ()   # every other input that changes the figure:
    #                                           (name, value), spelled `name-value`

    @property
    def caption(self) -> tuple[str, str]:
        """Two lines, e.g. "H100 SXM · Llama 3.1 8B" and "8,192-token prompt · 64 streams ·
        budget 576 tokens · simple cost model" (one would be wider than a narrow figure)."""
        return (f"{self.gpu} · {self.model}" + (f" · {self.tp} GPUs (tensor parallel)"
                                                 if self.tp > 1 else ""),
                f"{self.prompt:,}-token prompt · {self.streams:,} stream"
                f"{'s' if self.streams != 1 else ''} · budget {self.budget:,} tokens · "
                f"{self.mode} cost model")

    def file_stem(self, view: str, look: Look) -> str:
        """E.g. `side-by-side_h100-sxm_llama-3.1-8b_prompt-8192_streams-64_context-4000_budget-576_
        vllm-v0-vs-sarathi_simple_light`: the view, every input that changes the figure and the
        theme, so two exports of different figures never share a name (a Sarathi-Serve lane is not
        an SGLang one, a dark export is not the light one)."""
        theme = "dark" if look.dark else "light"
        theme += "-contrast" if look.contrast else ""
        theme += "-presenter" if look.presenter else ""
        parts = [view, self.gpu_id, self.model_id, *([f"tp-{self.tp}"] if self.tp > 1 else []),
                 f"prompt-{int(self.prompt)}", f"streams-{int(self.streams)}",
                 *([f"context-{int(self.context)}"] if self.context is not None else []),
                 f"budget-{int(self.budget)}",
                 *(["-vs-".join(self.policies)] if self.policies else []), self.mode,
                 *(f"{name}-{_spelled(value)}" for name, value in self.more), theme]
        return "_".join(_SAFE.sub("-", part) for part in parts)


def _spelled(value: object) -> str:
    """An input's value as a file name spells it: 2.0 as 2, a list joined by '-'."""
    if isinstance(value, (list, tuple)):
        return "-".join(map(_spelled, value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_SAFE = re.compile(r"[^A-Za-z0-9.-]+")   # what a file name keeps of a custom name


def file_stem(scenario: Scenario | None, view: str, look: Look) -> str:
    """A saved figure's name before its extension: `Scenario.file_stem`, or the view alone where
    there is no scenario (the player's saved frames add their clock to it)."""
    return view if scenario is None else scenario.file_stem(view, look)


def file_name(scenario: Scenario | None, view: str, look: Look, ext: str) -> str:
    """The name a figure is saved under, by the app's downloads and by `python -m sim export`
    without --out."""
    return f"{file_stem(scenario, view, look)}.{ext}"


# --- a figure exactly as wide as asked ----------------------------------------------------------
MIN_PLOT_PX = 120      # the narrowest plot a fitted figure may shrink to
FIT_TRIES = 8
EM = 0.6               # a caption character's width at most, in font sizes (Liberation Sans: ~0.55)


def fitted(build: Callable[[int], Figure], width: int, caption: tuple[str, ...] = ()) -> Figure:
    """`build(plot width)`'s figure, with `caption` above it (wrapped to the width), whose whole
    picture (axes, legends, caption and margins) is exactly `width` CSS pixels wide: a builder's
    width is its plot's, and what a reader asks for is the picture's (a PNG is PNG_SCALE times
    it, an SVG and a GIF it). The plot is narrowed by what the rest adds, by the secant rule (a
    figure whose panels sit side by side grows by less than its plot), and the last pixels are
    made up in the right margin."""
    def draw(plot: int) -> tuple[Figure, int]:
        figure = build(plot)
        if caption:
            figure = figure.captioned(*wrapped(caption, width - 2 * figure.look.edge_px,
                                               figure.look.caption_size))
        return figure, picture_width(figure)

    tried = {width: draw(width)}
    plot, before = width, None
    for _ in range(FIT_TRIES):
        drawn = tried[plot][1]
        if drawn == width:
            break
        slope = 1.0 if before is None or tried[before][1] == drawn else \
            (drawn - tried[before][1]) / (plot - before)
        step = round((width - drawn) / max(slope, 0.1)) or (1 if drawn < width else -1)
        following = max(MIN_PLOT_PX, plot + step)
        if following in tried:
            break
        tried[following] = draw(following)
        plot, before = following, plot
    fitting = [(drawn, figure) for figure, drawn in tried.values() if drawn <= width]
    if not fitting:
        least = min(drawn for _, drawn in tried.values())
        raise InputError(f"this figure's titles, axes and legends need {least:,} px or more; "
                         f"{width:,} px is too narrow")
    drawn, figure = max(fitting, key=lambda pair: pair[0])
    return replace(figure, margin_right=width - drawn)


def wrapped(lines: tuple[str, ...], width: float, size: int) -> tuple[str, ...]:
    """Each line cut at its " · " (and a part still too long at its spaces) into as few lines
    as keep every one within `width` px, each character at most EM font sizes wide."""
    out = []
    for line in lines:
        out += _fill(line.split(" · "), " · ", width, size)
    return tuple(out)


def _fill(pieces: list[str], joiner: str, width: float, size: int) -> list[str]:
    lines: list[str] = []
    for piece in pieces:
        if len(piece) * size * EM > width and joiner != " ":
            parts = _fill(piece.split(" "), " ", width, size)
        else:
            parts = [piece]
        for part in parts:
            joined = f"{lines[-1]}{joiner}{part}" if lines else part
            if lines and len(joined) * size * EM <= width:
                lines[-1] = joined
            else:
                lines.append(part)
    return lines


def caption_lines(caption: tuple[str, ...], width: int, presenter: bool) -> int:
    """How many lines `fitted` sets the caption in, for a picture `width` px wide."""
    look = Look(presenter=presenter)
    return len(wrapped(caption, width - 2 * look.edge_px, look.caption_size))


def picture_width(figure: Figure) -> int:
    """The whole picture's width in CSS pixels, as vl-convert lays it out."""
    return int(convert(vlc.vegalite_to_scenegraph, figure.spec())["width"])


def png(figure: Figure, scale: float = PNG_SCALE, **values) -> bytes:
    """Lossless, recompressed: vl-convert's PNGs are ~15x larger than they need to be."""
    out = io.BytesIO()
    _image(figure, scale, **values).save(out, format="PNG", optimize=True)
    return out.getvalue()


def _image(figure: Figure, scale: float, **values) -> Image.Image:
    return Image.open(io.BytesIO(convert(vlc.vegalite_to_png, figure.spec(**values), scale=scale)))


def svg(figure: Figure, **values) -> str:
    return convert(vlc.vegalite_to_svg, figure.spec(**values))


# --- tables ---------------------------------------------------------------------------------
def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as a table for people: a float column that holds only whole numbers (token
    counts, iteration numbers) becomes an integer column, so a CSV says 576, not 576.0."""
    whole = {}
    for name, column in frame.items():
        if pd.api.types.is_float_dtype(column):
            values = column.dropna()
            if len(values) and np.isfinite(values).all() and (values == np.round(values)).all() \
                    and values.abs().max() < 2**53:
                whole[name] = "Int64"
    return frame.astype(whole) if whole else frame


def csv_tables(figure: Figure) -> dict[str, str]:
    """One CSV per table the figure draws, by table name."""
    return {name: tidy(frame).to_csv(index=False) for name, frame in figure.data.items()}


def csv_file(figure: Figure) -> tuple[bytes, str, str]:
    """(data, extension, MIME type): the one table's CSV, or a zip of one CSV per table."""
    tables = csv_tables(figure)
    if len(tables) == 1:
        return next(iter(tables.values())).encode(), "csv", "text/csv"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in tables.items():
            archive.writestr(f"{name}.csv", text)
    return out.getvalue(), "zip", "application/zip"
