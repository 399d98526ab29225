"""The figures the app pages and `python -m sim export` share: traces or a cost model in, Figures out.

One function per view, so a figure in the docs and the same view in the app cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.metrics import request_times
from sim.serving.policies import get_policy
from sim.studies.budget import (
    ScenarioIteration,
    largest_budget_within,
    scenario_iterations,
)
from sim.studies.sweep import EngineDefault, engine_defaults

from .figure import Figure
from .frames import LaneFrames, boundaries_s, lane_frames
from .roofline import (
    budget_curve,
    curve_budgets,
    curve_frame,
    markers_frame,
    points_frame,
    roof_frame,
    roofline,
    tile_view,
)
from .theme import Look
from .timeline import figure_height, rows_to_fit, side_by_side, streams_only

LANES = (("unchunked", "Unchunked"), ("chunked", "Chunked"))
# The time axis: around the new prompt (where the stall and the chunks are), or the whole run.
WINDOWS = {"prompt": "from the arrival to FOCUS_MARGIN x the later first token of the new request, "
                     "where the stall and the chunks are",
           "run": "until every request has finished"}
# each window as a reader is shown it (a link spells its key)
WINDOW_NAMES = {"prompt": "Around the new prompt", "run": "The whole run"}
FOCUS_MARGIN = 1.5   # the prompt window ends at 1.5 x the later lane's first token


@dataclass(frozen=True, eq=False)
class Timeline:
    """Both lanes' frames, the clock's end and the instants a player steps between (seconds)."""
    lanes: list[LaneFrames]
    t_max: float
    boundaries: list[float]

    def figure(self, look: Look, width: int = 900, streams: bool = False,
               rows_px: int | None = None, beside: bool = False) -> Figure:
        """The lanes one above the other, or `beside` each other (`width`: each lane's)."""
        build = streams_only if streams else side_by_side
        return build(self.lanes, look, t_max=self.t_max, width=width, rows_px=rows_px,
                     beside=beside)

    def height(self, look: Look, streams: bool = False, rows_px: int | None = None,
               beside: bool = False) -> int:
        """The figure's height in CSS pixels, for the frame that shows it."""
        return figure_height(self.lanes, look, bars=not streams, rows_px=rows_px, beside=beside)

    def rows_to_fit(self, look: Look, height_px: float, streams: bool = False,
                    beside: bool = False) -> int:
        """The decoder blocks' height (`rows_px`) that makes the figure `height_px` tall."""
        return rows_to_fit(self.lanes, look, height_px, bars=not streams, beside=beside)


def lane_title(name: str, trace: Trace) -> str:
    """E.g. "Chunked · Sarathi-Serve OSDI'24 (stall-free), budget 576"; an unchunked policy
    never splits a prompt, so its budget is not what shapes its lane, except vLLM V0's, which
    runs at its own budget without chunking (it ignores a longer prompt)."""
    policy = get_policy(trace.policy)
    if policy.profile.prompt_limit:
        return f"{name} · {policy.label}, own budget {trace.budget:,}"
    return f"{name} · {policy.label}" + (f", budget {trace.budget:,}" if policy.chunked else "")


def window_end_s(traces: Sequence[Trace], window: str) -> float:
    """Where the time axis ends. "prompt": FOCUS_MARGIN x the later lane's first token of the new
    request, so the stall, the chunks and the cadence after them fill the chart; "run": the end."""
    if window not in WINDOWS:
        raise InputError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    run_end = max(float(trace.end_s[-1]) for trace in traces)
    firsts = [float(np.nanmax(request_times(trace).ttft_s + trace.arrival_s))
              for trace in traces if (~trace.prefilled).any()]
    if window == "run" or not firsts:
        return run_end
    return min(run_end, FOCUS_MARGIN * max(firsts))


def timeline(unchunked: Trace, chunked: Trace, window: str = "prompt") -> Timeline:
    """The side-by-side data: the unchunked lane above the chunked one, cut to the window."""
    until_s = window_end_s((unchunked, chunked), window)
    lanes = [lane_frames(trace, key, lane_title(name, trace), until_s=until_s)
             for (key, name), trace in zip(LANES, (unchunked, chunked))]
    # the last bars may run past the window's end: the player steps to it, the chart clips them
    steps = [b for b in boundaries_s(*(lane.iterations for lane in lanes)) if b < until_s]
    return Timeline(lanes, until_s, steps + [until_s])


@dataclass(frozen=True, eq=False)
class BudgetPlan:
    """The roofline page's numbers: the scenario's iterations priced, and the budgets to know."""
    iterations: list[ScenarioIteration]
    tpot_s: float
    largest: int | None            # largest budget within the TPOT target (None: none is)
    vllm_default: EngineDefault
    sglang_default: EngineDefault
    markers: pd.DataFrame
    budget: int                    # the scenario's


def budget_plan(cost: CostModel, decodes: int, context: int, prompt: int, budget: int,
                tpot_s: float) -> BudgetPlan:
    largest = largest_budget_within(cost, decodes, context, tpot_s, prompt)
    vllm, sglang = engine_defaults(cost.gpu)
    marked = {"your budget": budget, "largest within target": largest,
              "vLLM serve default": vllm.budget, "SGLang default": sglang.budget}
    return BudgetPlan(scenario_iterations(cost, decodes, context, prompt, budget), tpot_s, largest,
                      vllm, sglang, markers_frame(cost, decodes, context, prompt, marked), budget)


@dataclass(frozen=True, eq=False)
class RooflineFigures:
    """The Roofline page's charts, top to bottom; `tiles` is None in a cost mode without GEMM
    tiles (simple, roofline)."""
    roof: Figure
    curve: Figure
    tiles: Figure | None

    @property
    def shown(self) -> tuple[Figure, ...]:
        """The figures there are, in the page's order (what an export stacks)."""
        return tuple(f for f in (self.roof, self.curve, self.tiles) if f is not None)


def roofline_figures(cost: CostModel, plan: BudgetPlan, decodes: int, context: int, prompt: int,
                     look: Look, width: int = 700) -> RooflineFigures:
    """The roofline with the scenario's iterations, iteration time against budget, and the GEMM
    tile steps around the largest budget within the target and the scenario's."""
    gpu = cost.gpu
    points = points_frame(plan.iterations)
    roof = roofline(points, roof_frame(gpu.peak_flops, gpu.bandwidth, points.intensity),
                    peak_flops=gpu.peak_flops, bandwidth=gpu.bandwidth, gpu_name=gpu.name,
                    look=look, width=width)
    budgets = curve_budgets(decodes, prompt, list(plan.markers.budget))
    curve = budget_curve(curve_frame(cost, decodes, context, prompt, budgets), plan.markers,
                         tpot_ms=plan.tpot_s * 1e3, look=look, width=width)
    marked = {"largest within target": plan.largest, "your budget": plan.budget}
    tiles = tile_view(cost, decodes, context, prompt, marked, plan.tpot_s * 1e3, look, width)
    return RooflineFigures(roof, curve, tiles)
