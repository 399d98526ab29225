"""The work of an export, estimated before anything runs or is drawn: its runs (the work
estimator, sim/serving/work.py) and its figure (frames x pixels).

Each frame is rendered by vl-convert, decoded and (for a gif) quantized and kept until the file is
written, so drawing grows with frames x pixels. A view's height in CSS pixels is fixed
(VIEW_HEIGHT, measured at --width 300 to 4,000; presenter fonts make it taller) and its width is
--width plus its legends (< MARGIN); PNGs are drawn at 2 pixels per CSS pixel. Per-pixel costs were
measured on the reference machine (a 4,000 px, 600-frame gif took 243 s and 3.1 GB), with a margin.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.serving.work import CLI_BUDGET, WorkTooLarge, combined, fmt_work_bytes, fmt_work_seconds

from .common import PROCESS_BYTES, PROCESS_SECONDS, check_work, lane_args, planned_run, remedy

VIEW_HEIGHT = {"side-by-side": (532, 852), "streams": (274, 705), "roofline": (1011, 1271)}
MARGIN = 350                # legends and titles beside the plot, CSS pixels
PNG_SCALE = 2               # charts.export.PNG_SCALE
SECONDS_PER_FRAME = 0.05    # a frame's spec, rendered
SECONDS_PER_PIXEL = 5e-7    # render, decode, quantize, encode
BYTES_PER_PIXEL = 10        # a gif keeps every frame until it is written: 46 frames at --width 4,000
#                             peaked at 1.33 GB here, 2 frames at 0.35 GB (22 MB a frame, 9.7 B a pixel)
DRAW_SECONDS = 3.0          # loading the chart packages and the renderer, once
DRAW_BYTES = 300e6


@dataclass(frozen=True)
class FigureWork:
    frames: int
    pixels: int             # per frame
    seconds: float
    bytes: float

    def frames_that_fit(self, seconds_beside: float = 0.0, bytes_beside: float = 0.0) -> int:
        """The most frames of this size the command's budget allows beside other work (the
        runs the figure draws, the command's own start)."""
        per_frame_s = SECONDS_PER_FRAME + self.pixels * SECONDS_PER_PIXEL
        per_frame_b = self.pixels * BYTES_PER_PIXEL
        return max(0, int(min((CLI_BUDGET.seconds - DRAW_SECONDS - seconds_beside) / per_frame_s,
                              (CLI_BUDGET.bytes - DRAW_BYTES - bytes_beside) / per_frame_b)))


def fewer_frames(fmt: str, frames: int, width: int) -> str:
    """The frames advice, for a gif that can still have at least two (else nothing)."""
    return f"use at most {frames:,} --frames at --width {width:,}" if fmt == "gif" and frames >= 2 else ""


def figure_work(view: str, fmt: str, width: int, frames: int, presenter: bool) -> FigureWork:
    """Upper bounds on drawing `view` as `fmt` (see the module docstring)."""
    height = VIEW_HEIGHT[view][presenter]
    scale = PNG_SCALE if fmt == "png" else 1
    pixels = (width + MARGIN) * height * scale ** 2
    count = frames if fmt == "gif" else 1
    return FigureWork(count, pixels,
                      DRAW_SECONDS + count * (SECONDS_PER_FRAME + pixels * SECONDS_PER_PIXEL),
                      DRAW_BYTES + count * pixels * BYTES_PER_PIXEL)


def check_export_work(args, fmt: str, width: int, frames: int) -> tuple[int, ...]:
    """Refuse an export whose figure, or whose runs (side-by-side and streams run both lanes,
    kept together for the figure) and figure together, are over the command's budget, naming
    what to change; else the iteration caps of the two lanes (chunked, unchunked) within it."""
    figure = figure_work(args.view, fmt, width, frames, args.presenter)
    if figure.seconds > CLI_BUDGET.seconds or figure.bytes > CLI_BUDGET.bytes:
        height = VIEW_HEIGHT[args.view][args.presenter]
        fewer = fewer_frames(fmt, figure.frames_that_fit(PROCESS_SECONDS, PROCESS_BYTES), width)
        raise WorkTooLarge(
            f"a {figure.frames:,}-frame {fmt} of {figure.pixels / 1e6:.2g} million pixels a frame "
            f"(--width {width:,} + legends, × {height} px tall) would take "
            f"≈ {fmt_work_seconds(figure.seconds)} and {fmt_work_bytes(figure.bytes)}, over the "
            f"command's {fmt_work_seconds(CLI_BUDGET.seconds)} and "
            f"{fmt_work_bytes(CLI_BUDGET.bytes)}; {fewer + ', or ' if fewer else ''}a smaller --width")
    if args.view == "roofline":
        return ()
    lanes = [planned_run(args), planned_run(lane_args(args, args.unchunked))]
    work = combined([lane.work() for lane in lanes], held_together=True)
    runs_s, runs_b = work.cost(work.caps_at(1.0))   # the runs at their likely iterations
    fewer = fewer_frames(fmt, figure.frames_that_fit(runs_s + PROCESS_SECONDS, runs_b + PROCESS_BYTES),
                         width)
    return check_work(work.plus(figure.seconds, figure.bytes),
                      f"this export (two runs and a {figure.frames:,}-frame {fmt})",
                      remedy(args) + (f"; or {fewer}" if fewer else ""))
