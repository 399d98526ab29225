"""The work of an export, estimated before anything runs or is drawn: its runs (the work
estimate, sim/effort/estimate.py) and its figure.

A figure's size in CSS pixels is its view's (VIEW_HEIGHT: the tallest figure of each view, its
decoder blocks at their full height and its scenario's two lines above it, plus a line for each
line more its scenario wraps to at a narrow width, plus TILES_HEIGHT for the roofline view's GEMM
tile steps in a cost mode with tiles; its width --width, which the export draws the whole picture
to), measured on rendered figures: tests/cli/test_export_cli.py renders each view and checks
them. A PNG or an SVG
is one render (PNGs at 2 pixels per CSS pixel). A GIF (charts.film.gif) is a few renders of the
frame's size (the clock's start, its end, the whole figure, the words that change), then per frame
a composition mapped to 64 colours, which the GIF writer keeps (a byte a pixel) until the file is
written. Each price was measured on the reference machine (2 cores shared with other work; CPU
time, as the wall clock there swings with the load) and carries a margin of about 1.5x: the
measured figure is beside each.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.effort.caps import (
    CLI_ALLOWANCE,
    EffortTooLarge,
    combined,
    fmt_effort_bytes,
    fmt_effort_seconds,
)

from .common import (
    PROCESS_BYTES,
    PROCESS_SECONDS,
    check_work,
    cost_model_from,
    lane_args,
    planned_run,
    remedy,
    work_of,
)

# (normal, presenter), with two lines of scenario: measured 954 and 962 px, 728 and 815, 1,083
# and 1,143 (the roofline view in the simple and roofline modes)
VIEW_HEIGHT = {"side-by-side": (965, 975), "streams": (740, 825), "roofline": (1095, 1155)}
# the roofline view's GEMM tile steps, drawn in a mode with tiles (calibrated), at their tallest
# (on the H100 at 25 ms, the scenario's budget lying off the window, a line under the subtitle:
# --budget 4096): measured 1,500 and 1,583 px in all at 4,000 px, 407 and 428 more than without
# them (both budgets marked, the defaults: 404 and 421)
TILES_HEIGHT = (410, 430)
CAPTION_LINES = 2
CAPTION_LINE_PX = (20, 29)  # a line of the scenario (charts.theme.Look.caption_size × 1.3)
PNG_SCALE = 2               # charts.export.PNG_SCALE
DRAW_SECONDS = 3.0          # loading the chart packages and the renderer, once
DRAW_BYTES = 300e6
# a picture drawn once: a 4,000 px presenter roofline PNG (21.7 million pixels) peaked at
# 0.42 GB, a 300 px one (1.8 million) at 0.28 GB: 7 B a pixel
RENDER_SECONDS_PER_PIXEL = 5e-7
RENDER_BYTES_PER_PIXEL = 10
# a GIF's renders: 0.9 s of CPU and 0.18 GB more for a 4,000 px frame (2.8 million pixels)
# than for a 300 px one: 3.6e-7 s and 71 B a pixel
GIF_RENDER_SECONDS_PER_PIXEL = 5e-7
GIF_RENDER_BYTES_PER_PIXEL = 100
# a GIF's frames: 4,000 px streams, 87 frames 8.1 s of CPU and 0.77 GB, 300 frames 17.8 s and
# 1.40 GB (45 ms and 1.05 B a pixel a frame); side by side at 900 px, 600 frames, 14.2 s and
# 1.01 GB: 10 ms a frame and 1.6e-8 s a pixel
FRAME_SECONDS = 0.015
FRAME_SECONDS_PER_PIXEL = 2.5e-8
FRAME_BYTES_PER_PIXEL = 1.5


@dataclass(frozen=True)
class FigureWork:
    frames: int
    pixels: int             # per frame (or picture)
    width: int              # CSS pixels
    height: int
    once: tuple[float, float]        # (seconds, bytes) whatever the frames
    per_frame: tuple[float, float]

    @property
    def seconds(self) -> float:
        return self.once[0] + self.frames * self.per_frame[0]

    @property
    def bytes(self) -> float:
        return self.once[1] + self.frames * self.per_frame[1]

    def frames_that_fit(self, seconds_beside: float = 0.0, bytes_beside: float = 0.0) -> int:
        """The most frames of this size the command's budget allows beside other work (the
        runs the figure draws, the command's own start)."""
        return max(0, int(min((CLI_ALLOWANCE.seconds - self.once[0] - seconds_beside) / self.per_frame[0],
                              (CLI_ALLOWANCE.bytes - self.once[1] - bytes_beside) / self.per_frame[1])))


def fewer_frames(fmt: str, frames: int, width: int) -> str:
    """The frames advice, for a gif that can still have at least two (else nothing)."""
    return f"use at most {frames:,} --frames at --width {width:,}" if fmt == "gif" and frames >= 2 else ""


def figure_work(view: str, fmt: str, width: int, frames: int, presenter: bool,
                caption_lines: int = CAPTION_LINES, tiles: bool = False) -> FigureWork:
    """Upper bounds on drawing `view` as `fmt` with its scenario in `caption_lines` lines, and
    with the GEMM tile steps where `tiles` (the roofline view in a mode with tiles; see the module
    docstring)."""
    css_width = width
    height = (VIEW_HEIGHT[view][presenter] + TILES_HEIGHT[presenter] * tiles
              + (caption_lines - CAPTION_LINES) * CAPTION_LINE_PX[presenter])
    if fmt != "gif":
        pixels = css_width * height * (PNG_SCALE ** 2 if fmt == "png" else 1)
        return FigureWork(1, pixels, css_width, height, (DRAW_SECONDS, DRAW_BYTES),
                          (pixels * RENDER_SECONDS_PER_PIXEL, pixels * RENDER_BYTES_PER_PIXEL))
    pixels = css_width * height
    return FigureWork(frames, pixels, css_width, height,
                      (DRAW_SECONDS + pixels * GIF_RENDER_SECONDS_PER_PIXEL,
                       DRAW_BYTES + pixels * GIF_RENDER_BYTES_PER_PIXEL),
                      (FRAME_SECONDS + pixels * FRAME_SECONDS_PER_PIXEL, pixels * FRAME_BYTES_PER_PIXEL))


def draws_tiles(args) -> bool:
    """Whether the export stacks the GEMM tile steps: the roofline view in a mode with tiles."""
    return args.view == "roofline" and cost_model_from(args).gemm_tile is not None


def check_export_work(args, fmt: str, width: int, frames: int,
                      caption: tuple[str, ...] | None = None) -> tuple[int, ...]:
    """Refuse an export whose figure (its scenario's lines `caption` above it: CAPTION_LINES
    when not given), or whose runs
    (side-by-side and streams run both lanes, kept together for the figure) and figure together,
    are over the command's budget, naming what to change; else the iteration caps of the two
    lanes (chunked, unchunked) within it."""
    from charts.export import caption_lines

    lines = CAPTION_LINES if caption is None else caption_lines(caption, width, args.presenter)
    figure = figure_work(args.view, fmt, width, frames, args.presenter, lines, draws_tiles(args))
    if figure.seconds > CLI_ALLOWANCE.seconds or figure.bytes > CLI_ALLOWANCE.bytes:
        fewer = fewer_frames(fmt, figure.frames_that_fit(PROCESS_SECONDS, PROCESS_BYTES), width)
        raise EffortTooLarge(
            f"a {figure.frames:,}-frame {fmt} of {figure.pixels / 1e6:.2g} million pixels a frame "
            f"({figure.width:,} × {figure.height:,} px) would take "
            f"≈ {fmt_effort_seconds(figure.seconds)} and {fmt_effort_bytes(figure.bytes)}, over the "
            f"command's {fmt_effort_seconds(CLI_ALLOWANCE.seconds)} and "
            f"{fmt_effort_bytes(CLI_ALLOWANCE.bytes)}; {fewer + ', or ' if fewer else ''}a smaller --width")
    if args.view == "roofline":
        return ()
    lanes = [planned_run(args), planned_run(lane_args(args, args.unchunked))]
    work = combined([work_of(lane) for lane in lanes], held_together=True)
    runs_s, runs_b = work.cost(work.caps_at(1.0))   # the runs at their likely iterations
    fewer = fewer_frames(fmt, figure.frames_that_fit(runs_s + PROCESS_SECONDS, runs_b + PROCESS_BYTES),
                         width)
    return check_work(work.plus(figure.seconds, figure.bytes),
                      f"this export (two runs and a {figure.frames:,}-frame {fmt})",
                      remedy(args) + (f"; or {fewer}" if fewer else ""))
