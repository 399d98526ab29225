"""Figures to files: PNG and SVG through vl-convert (no browser), and the figure's tables as tidy
CSV (one file per table; several tables in a zip). The GIF is charts.film's."""

from __future__ import annotations

import io
import re
import threading
import zipfile
from dataclasses import dataclass

import numpy as np
import pandas as pd
import vl_convert as vlc
from PIL import Image

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
        """E.g. `side-by-side_h100-sxm_llama-3.1-8b_prompt-8192_streams-64_budget-576_simple_
        light`: the view, the scenario and the theme, so two exports of different figures never
        share a name (a dark export is not the light one)."""
        theme = "dark" if look.dark else "light"
        theme += "-contrast" if look.contrast else ""
        theme += "-presenter" if look.presenter else ""
        parts = [view, self.gpu_id, self.model_id, *([f"tp-{self.tp}"] if self.tp > 1 else []),
                 f"prompt-{int(self.prompt)}", f"streams-{int(self.streams)}",
                 f"budget-{int(self.budget)}", self.mode, theme]
        return "_".join(_SAFE.sub("-", part) for part in parts)


_SAFE = re.compile(r"[^A-Za-z0-9.-]+")   # what a file name keeps of a custom name


def file_stem(scenario: Scenario | None, view: str, look: Look) -> str:
    """A saved figure's name before its extension: `Scenario.file_stem`, or the view alone where
    there is no scenario (the player's saved frames add their clock to it)."""
    return view if scenario is None else scenario.file_stem(view, look)


def file_name(scenario: Scenario | None, view: str, look: Look, ext: str) -> str:
    """The name a figure is saved under, by the app's downloads and by `python -m sim export`
    without --out."""
    return f"{file_stem(scenario, view, look)}.{ext}"


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
