"""The Chunking is exact page's runs and figure, cached: the study for a prompt, chunk and seed
(well under a second at the largest prompt), its near-tie search on request, and its picture with
downloads named and captioned by the page's own settings (the sidebar's serving scenario, which
other figures state, does not shape it)."""

from __future__ import annotations

import streamlit as st

from charts import export
from charts.exactness import bands_frame, score_map
from charts.figure import Figure
from charts.theme import Look
from sim.studies.exactness import (
    HEAD_DIM,
    HEADS,
    LAYERS,
    VOCAB,
    Exactness,
    NearTieSearch,
    chunk_bounds,
    exactness,
    near_tie_search,
)

from ..shell import widgets
from ..shell.cached_figure import cached_figure

NAME = "exactness"


@st.cache_data(max_entries=32, show_spinner="Running the tiny decoder twice in each precision…")
def compared(prompt: int, chunk: int, seed: int) -> Exactness:
    return exactness(prompt, chunk, seed)


@st.cache_data(max_entries=16, show_spinner=False)
def searched(prompt: int, chunk: int, seed: int, seconds: float) -> NearTieSearch:
    return near_tie_search(prompt, chunk, seed, seconds)


@cached_figure(max_entries=32)
def score_figure(prompt: int, chunk: int, look: Look) -> Figure:
    """Which attention scores each pass computes: one pass beside the chunks."""
    return score_map(bands_frame(prompt, chunk_bounds(prompt, chunk)), look,
                     side=340 if look.presenter else 300)


def caption(prompt: int, chunk: int, seed: int) -> tuple[str, str]:
    """A saved picture's two lines: what was computed, on which decoder."""
    return (f"Chunking is exact: a {prompt:,}-token prompt in one pass and in chunks of "
            f"{chunk:,} tokens",
            f"tiny decoder: {LAYERS} layers, {HEADS} heads of {HEAD_DIM}, vocabulary {VOCAB}, "
            f"random seed: {seed:,}")


def draw(prompt: int, chunk: int, seed: int, look: Look) -> None:
    """The picture, its downloads (PNG, SVG, CSV) and its numbers as tables."""
    figure = score_figure.figure(prompt, chunk, look)
    widgets.chart(score_figure.spec(prompt, chunk, look), lambda: figure, NAME, tools=False)
    theme = ("dark" if look.dark else "light") + ("-contrast" if look.contrast else "") + (
        "-presenter" if look.presenter else "")
    stem = f"{NAME}_prompt-{prompt}_chunk-{chunk}_seed-{seed}_{theme}"
    files = [("PNG", "png", lambda: export.png(figure.captioned(*caption(prompt, chunk, seed))),
              "image/png"),
             ("SVG", "svg", lambda: export.svg(figure.captioned(*caption(prompt, chunk, seed))),
              "image/svg+xml"),
             ("CSV (zip)", "zip", lambda: export.csv_file(figure)[0], "application/zip")]
    with st.popover("Download", icon=":material/download:", key=f"downloads_{NAME}",
                    help=", ".join(label for label, *_ in files)):
        for label, ext, data, mime in files:
            saved_as = f"{stem}.{ext}"
            st.download_button(label, data, file_name=saved_as, mime=mime, on_click="ignore",
                               icon=":material/download:",
                               key=f"download_{NAME}_{'csv' if ext == 'zip' else ext}",
                               help=saved_as, width="stretch")
    widgets.numbers_table(lambda: figure, NAME)
