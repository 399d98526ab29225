"""The roofline of the chosen GPU with the scenario's iterations on it, the iteration-time vs
batch-tokens curve that picks a budget (the Sarathi-Serve recipe), and, in the calibrated mode, the
same curve token by token over a few GEMM tiles, where it climbs in steps.

Roofline: attainable FLOP/s = min(peak, bandwidth x intensity); the ridge, peak / bandwidth FLOP per
byte, is where a pass turns from memory- to compute-bound. Each iteration sits at its intensity
(FLOPs / bytes) and runs at FLOPs / time.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from sim.cost.iteration import CostModel
from sim.cost.tiles import tiled
from sim.studies.budget import ScenarioIteration, budget_iteration_cost, fused_iteration
from sim.units import fmt_counted

from .figure import Figure
from .theme import SERIES, Look

TFLOP = 1e12
# a horizontal axis's labels keep this many pixels between them (Vega hides every other one until
# they do): with none, a right-flush last label could touch the one before ("8,5009,000")
LABEL_GAP_PX = 8


def x_axis(overlap: bool | str = True, **options) -> alt.Axis:
    """A horizontal axis whose labels never touch, at any width (`overlap`: Vega's strategy,
    "greedy" on a log scale, as Vega-Lite's default there)."""
    return alt.Axis(labelOverlap=overlap, labelSeparation=LABEL_GAP_PX, **options)


def points_frame(iterations: Sequence[ScenarioIteration]) -> pd.DataFrame:
    """One row per priced iteration: where it sits on the roofline and why."""
    rows = []
    for it in iterations:
        c = it.cost
        rows.append(dict(
            key=it.key, label=it.label, tokens=it.composition.tokens,
            intensity=c.intensity, achieved_tflops=c.flops / c.time_s / TFLOP if c.time_s else 0.0,
            flops=c.flops, bytes=c.bytes, compute_ms=c.compute_s * 1e3, memory_ms=c.memory_s * 1e3,
            time_ms=c.time_s * 1e3, bound=c.bound,
            text=f"{it.label}: {_intensity(c.intensity)} FLOP/B, {c.bound}-bound"))
    return pd.DataFrame(rows)


def _intensity(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def roof_frame(peak_flops: float, bandwidth: float, intensities: Sequence[float]) -> pd.DataFrame:
    """The roof, sampled over a log range wide enough for every point and the ridge."""
    ridge = peak_flops / bandwidth
    finite = [x for x in intensities if np.isfinite(x) and x > 0] + [ridge]
    grid = np.geomspace(min(finite) / 2, max(finite) * 2, 60)
    grid = np.unique(np.r_[grid, ridge])
    return pd.DataFrame({"intensity": grid,
                         "attainable_tflops": np.minimum(peak_flops, bandwidth * grid) / TFLOP})


def point_labels(points: pd.DataFrame, roof: pd.DataFrame, width: int, look: Look) -> list[dict]:
    """Each point's short name under it, a row lower where it would touch the name before it: a
    chunk and the fused iteration sit a few pixels apart on the log axis (512 and 576 FLOP/B at
    the defaults), and their markers overlap."""
    if points.empty:
        return []
    low, high = np.log(roof.intensity.min()), np.log(roof.intensity.max())
    char_px = 0.6 * look.font_size
    rows: list[float] = []   # the right edge of the last name in each row, in pixels
    out = []
    for p in points.sort_values("intensity").itertuples():
        name = p.key   # the iteration's short name: decode, chunk, fused, prompt
        x = width * (np.log(p.intensity) - low) / (high - low)
        half = len(name) * char_px / 2 + 3
        row = next((i for i, right in enumerate(rows) if x - half > right), len(rows))
        rows[row:row + 1] = [x + half]
        out.append({"intensity": p.intensity, "achieved_tflops": p.achieved_tflops, "name": name,
                    "offset_px": 12 + row * (look.font_size + 3)})
    return out


def roofline(points: pd.DataFrame, roof: pd.DataFrame, *, peak_flops: float, bandwidth: float,
             gpu_name: str, look: Look, width: int = 700) -> Figure:
    ridge = peak_flops / bandwidth
    # the axis ends where the roof does: a decade of margin would crowd the points together
    x = alt.X("intensity:Q", scale=alt.Scale(type="log", nice=False),
              title="arithmetic intensity (FLOP per byte)",
              axis=x_axis("greedy", format="~s"))
    y = alt.Y("attainable_tflops:Q", scale=alt.Scale(type="log"), title="TFLOP/s",
              axis=alt.Axis(format="~s"))
    line = alt.Chart(alt.Data(name="roof")).mark_line(color=look.ink, strokeWidth=2).encode(x=x, y=y)
    ridge_data = alt.Data(values=[{"intensity": ridge, "attainable_tflops": peak_flops / TFLOP,
                                   "text": f"ridge {_intensity(ridge)} FLOP/B"}])
    ridge_rule = alt.Chart(ridge_data).mark_rule(color=look.muted, strokeDash=[4, 3]).encode(x=x)
    ridge_text = alt.Chart(ridge_data).mark_text(
        align="left", baseline="bottom", dx=6, dy=-4, color=look.muted,
        fontSize=look.font_size).encode(x=x, y=y, text="text:N")
    px = x.copy()
    py = alt.Y("achieved_tflops:Q", scale=alt.Scale(type="log"))
    color = alt.Color("bound:N", title="bound", scale=alt.Scale(
        domain=["memory", "compute"], range=[look.memory_bound, look.compute_bound]))
    tooltip = [alt.Tooltip("label:N", title="iteration"), alt.Tooltip("tokens:Q", format=","),
               alt.Tooltip("intensity:Q", title="intensity = FLOPs / bytes", format=",.4g"),
               alt.Tooltip("flops:Q", title="FLOPs", format=".4~s"),
               alt.Tooltip("bytes:Q", title="bytes", format=".4~s"),
               alt.Tooltip("compute_ms:Q", title="compute time (ms)", format=",.4g"),
               alt.Tooltip("memory_ms:Q", title="memory time (ms)", format=",.4g"),
               alt.Tooltip("time_ms:Q", title="iteration time (ms)", format=",.4g"),
               alt.Tooltip("achieved_tflops:Q", title="FLOPs / time (TFLOP/s)", format=",.4g"),
               alt.Tooltip("bound:N")]
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=0, titleLimit=0,
                        symbolOpacity=1, symbolFillColor=look.ink, symbolStrokeColor=look.ink)
    # outlines: a chunk and the fused iteration sit a few pixels apart, and both stay readable
    dots = alt.Chart(alt.Data(name="points")).mark_point(
        filled=False, strokeWidth=3 if look.presenter else 2.5, size=(220 if look.presenter else 140),
        opacity=1).encode(
        x=px, y=py, color=color.legend(orient="bottom", direction="horizontal"),
        shape=alt.Shape("text:N", title="iteration: intensity, bound", sort=None, legend=legend),
        tooltip=tooltip)
    labels = point_labels(points, roof, width, look)
    names = [alt.Chart(alt.Data(values=[x for x in labels if x["offset_px"] == dy])).mark_text(
        align="center", baseline="top", dy=dy, color=look.ink, fontSize=look.font_size).encode(
        x=alt.X("intensity:Q"), y=alt.Y("achieved_tflops:Q"), text="name:N")
        for dy in sorted({x["offset_px"] for x in labels})]
    chart = alt.layer(line, ridge_rule, ridge_text, dots, *names, width=width,
                      height=300 if look.presenter else 340,   # a 1280x720 projector: whole
                      title=alt.TitleParams(
                          f"Roofline: {gpu_name}",
                          subtitle=f"attainable = min(peak {peak_flops / TFLOP:,.4g} TFLOP/s, "
                                   f"bandwidth {bandwidth / 1e12:,.4g} TB/s × intensity)"))
    return Figure(chart, look, {"roof": roof, "points": points})


def curve_frame(cost: CostModel, decodes: int, context: int, prompt: int,
                budgets: Sequence[int]) -> pd.DataFrame:
    """Iteration time of the fused step (sim.studies.budget.fused_iteration) for each budget."""
    rows = []
    for b in sorted(set(int(b) for b in budgets)):
        c = budget_iteration_cost(cost, decodes, context, prompt, b)
        rows.append(dict(budget=b, chunk=max(0, min(b - decodes, prompt)), time_ms=c.time_s * 1e3,
                         compute_ms=c.compute_s * 1e3, memory_ms=c.memory_s * 1e3, bound=c.bound))
    return pd.DataFrame(rows)


def curve_budgets(decodes: int, prompt: int, marked: Sequence[int], points: int = 120) -> list[int]:
    """Budgets to price: a grid from the first budget that leaves a chunk up to a little past the
    largest marked budget (never past decodes + prompt, where the whole prompt already fits)."""
    first = decodes + 1
    last = max(first + 1, min(decodes + prompt, int(max(marked) * 1.25)))
    grid = np.unique(np.linspace(first, last, points).round().astype(int))
    return sorted(set(grid.tolist()) | {int(m) for m in marked if first <= m <= last})


def budget_curve(curve: pd.DataFrame, markers: pd.DataFrame, *, tpot_ms: float, look: Look,
                 width: int = 700) -> Figure:
    """Iteration time vs batch tokens, the TPOT target, and the budgets worth knowing."""
    x = alt.X("budget:Q", title="token budget = batch tokens (decodes + chunk)",
              axis=x_axis(format=",.0f"), scale=alt.Scale(zero=True))
    y = alt.Y("time_ms:Q", title="iteration time (ms)", scale=alt.Scale(zero=True))
    tooltip = [alt.Tooltip("budget:Q", format=","), alt.Tooltip("chunk:Q", format=","),
               alt.Tooltip("time_ms:Q", title="time (ms)", format=",.4g"),
               alt.Tooltip("compute_ms:Q", title="compute (ms)", format=",.4g"),
               alt.Tooltip("memory_ms:Q", title="memory (ms)", format=",.4g"),
               alt.Tooltip("bound:N")]
    line = alt.Chart(alt.Data(name="curve")).mark_line(color=look.ink, strokeWidth=2.5).encode(
        x=x, y=y, tooltip=tooltip)
    target = alt.Chart(alt.Data(values=[{"time_ms": tpot_ms, "text": f"TPOT target {tpot_ms:,.4g} ms",
                                         "budget": target_label_budget(curve, markers)}]))
    target_rule = target.mark_rule(color=look.muted, strokeWidth=2).encode(y=y)
    # at the right of the widest stretch between the marked budgets' rules, so no rule crosses
    # the words and the curve, rising, is far above the target there
    target_text = target.mark_text(align="right", baseline="bottom", dx=-6, dy=-4, color=look.muted,
                                   fontSize=look.font_size).encode(x=x, y=y, text="text:N")
    inks = {"your budget": look.ink, "largest within target": SERIES["violet"],
            "vLLM serve default": SERIES["brown"], "SGLang default": SERIES["olive"]}
    # colour and dash of one field share one legend (a legend on one and none on the other
    # conflict: Vega-Lite warns and drops one)
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=0)
    mark_color = alt.Color("text:N", title=None, sort=None, legend=legend, scale=alt.Scale(
        domain=list(markers.text), range=[inks[k] for k in markers.kind]))
    dash = alt.StrokeDash("text:N", title=None, legend=legend, sort=None, scale=alt.Scale(
        domain=list(markers.text), range=[[1, 0], [6, 3], [2, 2], [8, 2, 2, 2]][:len(markers)]))
    marks = alt.Chart(alt.Data(name="markers"))
    rules = marks.mark_rule(strokeWidth=2).encode(
        x=x, color=mark_color, strokeDash=dash,
        tooltip=[alt.Tooltip("kind:N"), alt.Tooltip("budget:Q", format=","),
                 alt.Tooltip("time_ms:Q", title="time (ms)", format=",.4g")])
    dots = marks.mark_point(filled=True, size=90, opacity=1).encode(x=x, y=y, color=mark_color)
    chart = alt.layer(line, target_rule, target_text, rules, dots, width=width,
                      height=290 if look.presenter else 320,
                      title=alt.TitleParams("Iteration time vs token budget",
                                            subtitle="the Sarathi-Serve recipe: the largest budget "
                                                     "whose iteration meets the TPOT target"))
    return Figure(chart, look, {"curve": curve, "markers": markers})


def target_label_budget(curve: pd.DataFrame, markers: pd.DataFrame) -> float:
    """Where the TPOT target's label ends on the budget axis: at the right of the widest stretch
    between two marked budgets' rules (or an end of the axis, which starts at 0)."""
    marked = [int(b) for b in markers.budget]
    edges = sorted({0, *marked, max([*(int(b) for b in curve.budget), *marked], default=0)})
    _, end = max(zip(edges, edges[1:]), key=lambda pair: pair[1] - pair[0], default=(0, 0))
    return float(end)


def markers_frame(cost: CostModel, decodes: int, context: int, prompt: int,
                  marked: dict[str, int | None]) -> pd.DataFrame:
    """{kind: budget} -> one row per marked budget with its iteration time and a label."""
    rows = []
    for kind, budget in marked.items():
        if budget is None:
            continue
        t = budget_iteration_cost(cost, decodes, context, prompt, budget).time_s * 1e3
        rows.append(dict(kind=kind, budget=int(budget), time_ms=t,
                         text=f"{kind}: {budget:,} tokens → {t:,.4g} ms per iteration"))
    return pd.DataFrame(rows, columns=["kind", "budget", "time_ms", "text"])


# --- GEMM tiles: the curve token by token --------------------------------------------------------
TILES_EACH_SIDE = 2   # whole tiles drawn on either side of the budgets the tile view centres on
# the most tiles the view spans to show two marked budgets at once: ten tiles are about 50 px each
# in the narrowest export's plot (about 500 px), still steps; budgets farther apart leave the
# second one off it, and the chart says where it lies
MAX_TILES_SHOWN = 10


def tile_window(center: int, tile: int, first: int, last: int,
                upto: int | None = None) -> tuple[int, int]:
    """Batch tokens to price one by one: the tiles from the one that holds `center` to the one
    that holds `upto` (by default `center`'s) and TILES_EACH_SIDE more on either side (one token
    past a tile's end, so its first step shows), within [first, last]: a fused iteration holds at
    least one chunk token and at most decodes + prompt."""
    low_tile, high_tile = (_tile_of(b, tile) for b in (center, center if upto is None else upto))
    low = max(first, (low_tile - 1 - TILES_EACH_SIDE) * tile)
    return low, max(low, min(last, (high_tile + TILES_EACH_SIDE) * tile + 1))


def _tile_of(tokens: int, tile: int) -> int:
    """The tile `tokens` rows end in, counted from 1."""
    return -(-max(tokens, 1) // tile)


def tile_frame(cost: CostModel, decodes: int, context: int, prompt: int, low: int,
               high: int) -> pd.DataFrame:
    """The fused iteration (every decode and the prompt's costliest chunk) at every batch token
    count from `low` to `high`: its GEMM rows, its time, and its time on exactly its tokens."""
    rows = []
    for tokens in range(low, high + 1):
        it = tiled(cost, fused_iteration(decodes, context, prompt, tokens))
        rows.append(dict(tokens=it.tokens, rows=it.rows, empty_rows=it.wasted_rows,
                         time_ms=it.time_s * 1e3, exact_ms=it.exact_time_s * 1e3,
                         empty_ms=it.wasted_s * 1e3, tile=it.tile_here))
    return pd.DataFrame(rows, columns=["tokens", "rows", "empty_rows", "time_ms", "exact_ms",
                                       "empty_ms", "tile"])


# a token's rows as its tooltip works them out, written by Vega from its row of tile_frame (a
# string in each of hundreds of rows would double what the page sends)
TILE_FORMULA = ("'rows = ⌈' + format(datum.tokens, ',') + ' / ' + datum.tile + '⌉ × ' + datum.tile"
                " + ' = ' + format(datum.rows, ',') + \"; empty rows' time = time − time on exactly \""
                " + format(datum.tokens, ',') + ' rows'")


def tile_marks_frame(steps: pd.DataFrame, marked: dict[str, int | None],
                     last: int) -> pd.DataFrame:
    """{kind: budget} -> the marked budgets whose iteration is inside the window, with their rows
    and label; a budget past `last` (decodes + prompt) holds the whole prompt: `last` tokens."""
    by_tokens = steps.set_index("tokens")
    rows = []
    for kind, budget in marked.items():
        tokens = None if budget is None else min(budget, last)
        if tokens is None or tokens not in by_tokens.index:
            continue
        at = by_tokens.loc[tokens]
        held = fmt_counted(tokens, "token") if tokens == budget else \
            f"{budget:,}, all {fmt_counted(tokens, 'token')}"
        rows.append(dict(kind=kind, tokens=int(tokens), rows=int(at.rows),
                         empty_rows=int(at.empty_rows), time_ms=float(at.time_ms),
                         text=f"{kind}: {held} → {int(at.rows):,} rows"
                              + (f", {int(at.empty_rows):,} empty" if at.empty_rows else "")))
    return pd.DataFrame(rows, columns=["kind", "tokens", "rows", "empty_rows", "time_ms", "text"])


def off_window(steps: pd.DataFrame, marked: dict[str, int | None], decodes: int, prompt: int,
               tile: int) -> list[str]:
    """A line for each marked budget the window leaves out, saying where it is: a reader told of
    a budget looks for it on the chart."""
    low, high = int(steps.tokens.min()), int(steps.tokens.max())
    lines = []
    for kind, budget in marked.items():
        if budget is None:
            continue
        tokens = min(budget, decodes + prompt)
        if budget <= decodes:
            lines.append(f"{kind}, {budget:,}, leaves no chunk beside the {decodes:,} decodes: "
                         "no tile here")
        elif not low <= tokens <= high:
            right = tokens > high
            far = _tile_of(tokens - high if right else low - tokens, tile)   # past the window
            lines.append(f"{kind}, {budget:,} tokens, lies {fmt_counted(far, 'tile')} to the "
                         f"{'right' if right else 'left'}, too far to draw at this scale: the "
                         "curve above marks it")
    return lines


def tile_steps(steps: pd.DataFrame, marks: pd.DataFrame, *, tile: int, tpot_ms: float,
               look: Look, width: int = 700, notes: Sequence[str] = ()) -> Figure:
    """Iteration time at every batch token over a few tiles: flat-ish inside a tile, a step one
    token past its end, where the GEMMs start a new tile; a rule at each whole tile. `notes`:
    lines under the subtitle (a marked budget the window leaves out)."""
    low, high = int(steps.tokens.min()), int(steps.tokens.max())
    edges = list(range(-(-low // tile) * tile, high + 1, tile))
    x_scale = alt.Scale(domain=[low, high], nice=False, zero=False)
    x = alt.X("tokens:Q", title="batch tokens (decodes + chunk)", scale=x_scale,
              axis=x_axis(format=",.0f", values=edges))
    y = alt.Y("time_ms:Q", title="iteration time (ms)", scale=alt.Scale(zero=False))
    tooltip = [alt.Tooltip("tokens:Q", title="batch tokens", format=","),
               alt.Tooltip("rows:Q", title=f"rows computed (tiles of {tile})", format=","),
               alt.Tooltip("empty_rows:Q", title="empty rows", format=","),
               alt.Tooltip("time_ms:Q", title="time (ms)", format=",.4g"),
               alt.Tooltip("exact_ms:Q", title="time on exactly its tokens (ms)", format=",.4g"),
               alt.Tooltip("empty_ms:Q", title="the empty rows' time (ms)", format=",.3g"),
               alt.Tooltip("formula:N")]
    tiles = alt.Chart(alt.Data(values=[{"tokens": e} for e in edges])).mark_rule(
        color=look.grid, strokeWidth=1.5, strokeDash=[4, 3]).encode(x=x)
    data = alt.Chart(alt.Data(name="tiles"))
    line = data.mark_line(color=look.ink, strokeWidth=2.5).encode(x=x, y=y)
    # one invisible column per token, as tall as the plot: hovering anywhere above a token
    # shows its numbers (a 2.5 px line is hard to hit)
    hover = data.mark_rect(opacity=0).encode(
        x=alt.X("left:Q", scale=x_scale), x2="right:Q", tooltip=tooltip).transform_calculate(
        left="datum.tokens - 0.5", right="datum.tokens + 0.5", formula=TILE_FORMULA)
    layers = [tiles, line, hover]
    times = steps.time_ms
    if times.min() <= tpot_ms <= times.max():
        target = alt.Chart(alt.Data(values=[{"time_ms": tpot_ms, "tokens": low,
                                             "text": f"TPOT target {tpot_ms:,.4g} ms"}]))
        layers += [target.mark_rule(color=look.muted, strokeWidth=2).encode(y=y),
                   target.mark_text(align="left", baseline="bottom", dx=4, dy=-4,
                                    color=look.muted, fontSize=look.font_size).encode(
                       x=x, y=y, text="text:N")]
    if len(marks):
        inks = {"your budget": look.ink, "largest within target": SERIES["violet"]}
        color = alt.Color("text:N", title=None, sort=None, scale=alt.Scale(
            domain=list(marks.text), range=[inks.get(k, look.muted) for k in marks.kind]),
            legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0))
        layers.append(alt.Chart(alt.Data(name="tile_marks")).mark_point(
            filled=True, size=110, opacity=1).encode(
            x=x, y=y, color=color, tooltip=[alt.Tooltip("kind:N"),
                                            alt.Tooltip("tokens:Q", format=","),
                                            alt.Tooltip("rows:Q", format=","),
                                            alt.Tooltip("empty_rows:Q", format=","),
                                            alt.Tooltip("time_ms:Q", title="time (ms)",
                                                        format=",.4g")]))
    chart = alt.layer(*layers, width=width, height=260 if look.presenter else 280,
                      title=alt.TitleParams(
                          f"GEMM tiles: the iteration token by token, tiles of {tile} rows",
                          # in words, not ⌈ ⌉: the exports' font (vl-convert's Liberation Sans)
                          # has no ceiling brackets, and a line with one falls back to a serif
                          subtitle=[f"rows = tokens rounded up to a multiple of {tile}: one token "
                                    "past a whole tile starts a new one", *notes]))
    return Figure(chart, look, {"tiles": steps, "tile_marks": marks})


def tile_view(cost: CostModel, decodes: int, context: int, prompt: int,
              marked: dict[str, int | None], tpot_ms: float, look: Look,
              width: int = 700) -> Figure | None:
    """The tile steps around the marked budgets (the largest within the target and the
    scenario's), or, where they lie more than MAX_TILES_SHOWN tiles apart, around the first there
    is, saying where the other lies; None in a mode without tiles."""
    tile = cost.gemm_tile
    if tile is None:
        return None
    first, last = decodes + 1, decodes + prompt
    # a budget the decodes fill has no chunk and no place here; with none left, the first chunk token
    centres = [min(b, last) for b in marked.values() if b is not None and b > decodes] or [first]
    low, high = min(centres), max(centres)
    if _tile_of(high, tile) - _tile_of(low, tile) + 1 + 2 * TILES_EACH_SIDE > MAX_TILES_SHOWN:
        low = high = centres[0]
    steps = tile_frame(cost, decodes, context, prompt, *tile_window(low, tile, first, last, high))
    return tile_steps(steps, tile_marks_frame(steps, marked, last), tile=tile, tpot_ms=tpot_ms,
                      look=look, width=width,
                      notes=off_window(steps, marked, decodes, prompt, tile))
