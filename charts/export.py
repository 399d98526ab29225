"""Figures to files: PNG and SVG through vl-convert (no browser), GIF from PNG frames with Pillow.

A GIF animates the timeline's clock `t`: each frame is the same spec with `t` set, so the exported
animation and the in-app player show the same thing.
"""

from __future__ import annotations

import io

import numpy as np
import vl_convert as vlc
from PIL import Image

from .figure import Figure

PNG_SCALE = 2          # docs-ready: 2 px per CSS pixel
GIF_FRAMES = 48
GIF_FRAME_MS = 80      # 12.5 frames per second
GIF_HOLD_MS = 2000     # the last frame stays up before the loop restarts


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
    """`frames` images with the clock going from 0 to `t_max`, looping."""
    drawn = [_image(figure, scale, **{clock: float(t)}).convert("RGB")
             for t in np.linspace(0.0, t_max, max(2, int(frames)))]
    # a text that grows with the clock may widen a frame: every frame on one canvas, the largest
    canvas = (max(i.width for i in drawn), max(i.height for i in drawn))
    images = []
    for image in drawn:
        if image.size != canvas:
            whole = Image.new("RGB", canvas, figure.look.background)
            whole.paste(image, (0, 0))
            image = whole
        images.append(image.quantize(colors=64, method=Image.Quantize.MEDIANCUT))
    out = io.BytesIO()
    durations = [GIF_FRAME_MS] * (len(images) - 1) + [GIF_HOLD_MS]
    # disposal 2 (and no transparency): Pillow then writes every frame whole, the canvas' size,
    # instead of cropping it to what changed, which some viewers and editors mishandle
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:],
                   duration=durations, loop=0, optimize=True, disposal=2)
    return out.getvalue()
