"""Figures to files: PNG and SVG through vl-convert (no browser), GIF from PNG frames with Pillow,
and the figure's tables as tidy CSV (one file per table; several tables in a zip).

A GIF animates the timeline's clock `t`: each frame is the same spec with `t` set, so the exported
animation and the in-app player show the same thing. The spec is compiled to Vega once and only
the clock's signal changes between frames, which are drawn on several threads
(`python -m benchmarks.export_bench` prints the time of a 48-frame GIF).
"""

from __future__ import annotations

import io
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import vl_convert as vlc
from PIL import Image

from sim.errors import InputError

from .figure import Figure

PNG_SCALE = 2          # docs-ready: 2 px per CSS pixel
GIF_FRAMES = 48
GIF_FRAME_MS = 80      # 12.5 frames per second
GIF_HOLD_MS = 2000     # the last frame stays up before the loop restarts
GIF_COLOURS = 64       # one palette for every frame (from the last, fullest one): no flicker


def file_stem(view: str, gpu: str, model: str, budget: int) -> str:
    """A file name that says what the figure shows, e.g. `side-by-side_h100-sxm_llama-3.1-8b_
    budget-576`: the view, the GPU and model ids, the token budget."""
    return f"{view}_{gpu}_{model}_budget-{int(budget)}"


def png(figure: Figure, scale: float = PNG_SCALE, **values) -> bytes:
    """Lossless, recompressed: vl-convert's PNGs are ~15x larger than they need to be."""
    out = io.BytesIO()
    _image(figure, scale, **values).save(out, format="PNG", optimize=True)
    return out.getvalue()


def _image(figure: Figure, scale: float, **values) -> Image.Image:
    return Image.open(io.BytesIO(vlc.vegalite_to_png(figure.spec(**values), scale=scale)))


def svg(figure: Figure, **values) -> str:
    return vlc.vegalite_to_svg(figure.spec(**values))


def gif(figure: Figure, t_max: float, frames: int = GIF_FRAMES, clock: str = "t",
        scale: float = 1.0) -> bytes:
    """`frames` images with the clock going from 0 to `t_max`, looping. Every frame is drawn on
    one canvas the size of the largest (a frame whose marks reach less far is padded with the
    background, never cropped)."""
    vega = vlc.vegalite_to_vega(figure.spec())
    if not any(signal.get("name") == clock for signal in vega.get("signals", [])):
        raise InputError(f"the figure has no clock {clock!r} to animate")

    def draw(t: float) -> Image.Image:
        signals = [dict(s, value=t) if s.get("name") == clock else s for s in vega["signals"]]
        png_bytes = vlc.vega_to_png({**vega, "signals": signals}, scale=scale)
        return Image.open(io.BytesIO(png_bytes)).convert("RGB")

    times = [float(t) for t in np.linspace(0.0, t_max, max(2, int(frames)))]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        images = list(pool.map(draw, times))
    size = (max(i.width for i in images), max(i.height for i in images))
    palette = _on_canvas(images[-1], size, figure.look.background).quantize(
        colors=GIF_COLOURS, method=Image.Quantize.MEDIANCUT)
    frames_out = [_on_canvas(i, size, figure.look.background).quantize(palette=palette,
                                                                       dither=Image.Dither.NONE)
                  for i in images]
    out = io.BytesIO()
    durations = [GIF_FRAME_MS] * (len(frames_out) - 1) + [GIF_HOLD_MS]
    # disposal 2 (and no transparency): Pillow then writes every frame whole, the canvas' size,
    # instead of cropping it to what changed, which some viewers and editors mishandle
    frames_out[0].save(out, format="GIF", save_all=True, append_images=frames_out[1:],
                       duration=durations, loop=0, disposal=2)
    return out.getvalue()


def _on_canvas(image: Image.Image, size: tuple[int, int], background: str) -> Image.Image:
    if image.size == size:
        return image
    canvas = Image.new("RGB", size, background)
    canvas.paste(image, (0, 0))
    return canvas


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
