"""The side-by-side timeline: per lane, one bar per iteration (its decode and prefill shares), a
live counter line, every running decoder as a row of ticks (one per token) and the new request's
row, all on one time axis.

The whole figure is ONE Vega-Lite spec driven by a top-level parameter `t` (seconds, like `sim`;
the axes are in ms): bars and ticks after `t` are faded, the iteration running at `t` is drawn up
to `t`, and a playhead marks it. Whatever the clock drives is computed in the browser from small
tables: how long the streams have now gone without a token (a shaded block grows over every row
that waits), the largest gap so far (a bracket that grows while the stall happens), the tokens
delivered so far, and the new request's wait for its first token. A static chart sets `t` to the
end of the run; a player animates `t` in the browser.

A freeze has one definition here as everywhere in the lab (sim.studies.stalls): a stream is frozen
at `t` while its current gap, the time since its last token, exceeds STALL_S; a gap longer than
that is a freeze, its whole length the freeze's duration. While the clock runs the counters say
what the streams are doing; at the end, what happened (how many streams froze, the longest
freeze: the metric cards' numbers, from the lane's heading data). `counter_texts` says what the
counters read at a clock, in Python, for exports that draw their own frames; every time they
show is written as sim.units.fmt_seconds writes it (`seconds_expr` in the browser).

Nothing of a run is baked into the chart: the time axis ends at a second parameter `t_end`, and the
lanes' titles and numbers are data. So one chart serves every run of the same shape (lanes, rows),
built once and kept (`_chart`): Altair takes a few hundred ms to compose this many layers, which a
page rerun after a control change must not pay.

The lanes stand one above the other, or `beside` each other where the page is wide enough (each
a column with its own legend and time axis). For a projector (`Look.presenter`) lanes one above
the other are packed to fit a screen: the legend above the first lane only, the time axis under
the last only, shorter bars. The decoder block can be as tall as the room left (`rows_px`, from
`rows_to_fit`). Each part of a lane is a named view
(`view_name`), so a player can point at one (a guided tour's highlight).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import altair as alt
import pandas as pd

from sim.studies.stalls import STALL_S
from sim.units import HUGE, fmt_seconds

from .figure import CLOCK, Figure
from .frames import SAME_GAP_MS, LaneAtClock, LaneFrames, LaneShape, lane_at_clock
from .theme import Look

END = "t_end"                  # where the time axis ends (s): the run's or the window's end
NOW_MS = f"({CLOCK} * 1000)"   # the clock in the data's unit
GHOST_OPACITY = 0.3            # ticks and bars still to come: a preview, visible in both themes
FREEZE_OPACITY = 0.85          # a freeze's block: its colour whole, the ghost ticks under it faint
WAIT_OPACITY = 0.2             # a wait not (yet) a freeze: a faint grey block
STALL_MS = STALL_S * 1e3       # a wait longer than this shows as a freeze (sim.studies.stalls)
PARTS = {"decode_tokens": "decode tokens", "prefill_tokens": "prefill tokens"}
X_TITLE = "time since the new prompt arrived (ms)"
# the CPU time the engine added to the iteration (0 where an overlapped engine hid it) and its
# share of the duration; other = duration - max(compute, memory) - that overhead
OVERHEAD = "CPU overhead added (ms)"
OVERHEAD_SHARE = "overhead share of the duration"
OTHER = "other (all-reduce, kernel floors, ridge) (ms)"
NO_GRID = dict(grid=False)


PARTS_OF_A_LANE = ("heading", "bars", "counters", "rows", "new")
BESIDE_GAP_PX = 36   # between two lanes side by side


def view_name(lane: str, part: str) -> str:
    """The name of one part of a lane (`PARTS_OF_A_LANE`); Vega draws it as `<name>_group`."""
    return f"{lane}_{part}_view"


def _x(*, axis: bool, field: str, ticks: int | None = None) -> alt.X:
    """The shared time axis (`axis`: drawn under this view, with about `ticks` labels)."""
    scale = alt.Scale(domain=alt.ExprRef(f"[0, {END} * 1000]"), nice=False, zero=True)
    if not axis:
        return alt.X(f"{field}:Q", scale=scale, axis=alt.Axis(labels=False, ticks=False, title=None,
                                                               domain=False, **NO_GRID))
    return alt.X(f"{field}:Q", scale=scale, title=X_TITLE,
                 axis=alt.Axis(format=",.0f", **({"tickCount": ticks} if ticks else {}), **NO_GRID))


def _playhead(look: Look) -> alt.Chart:
    """A rule at the clock; hidden when the clock is at the end (the static chart)."""
    return (alt.Chart(alt.Data(values=[{}])).mark_rule(color=look.ink, strokeWidth=1.5)
            .transform_calculate(clock_ms=NOW_MS).transform_filter(f"{CLOCK} < {END}")
            .encode(x=alt.X("clock_ms:Q")))


HEADING_INDENT_PX = 40   # a lane beside another starts its heading this far left of its plot
BREAK = " · "            # a heading's parts: one line each in a lane beside another
LINES_BESIDE = (2, 3)    # the title's and the numbers' lines there (charts.views.lane_title, frames)


def _line_px(size: int) -> int:
    return size + 3


def heading_px(look: Look, beside: bool) -> int:
    """The heading's height: a title line over a line of numbers, or beside another lane
    LINES_BESIDE of each (the numbers left out on a projector)."""
    if not beside:
        return HEADING_PX[look.presenter]
    title, numbers = LINES_BESIDE
    return (title * _line_px(look.title_size) + 6
            + (0 if look.presenter else numbers * _line_px(look.font_size)))


def lane_heading(lane: LaneShape, look: Look, *, width: int, beside: bool = False) -> alt.LayerChart:
    """The lane's title and its whole-run numbers (dataset `{key}_heading`), as a chart title
    would draw them; on a projector the title alone (the numbers are in the page's cards and the
    lane's live counters). `beside` another lane, a narrow one, each part of the heading on a
    line of its own (split at BREAK), from the room left of the plot."""
    x, breaks = (-HEADING_INDENT_PX, dict(lineBreak=BREAK)) if beside else (0, {})
    limit = width - x
    heading = alt.Chart(alt.Data(name=f"{lane.key}_heading"))
    title = heading.mark_text(align="left", baseline="top", fontSize=look.title_size,
                              lineHeight=_line_px(look.title_size), fontWeight="bold",
                              color=look.ink, limit=limit, **breaks).encode(
        x=alt.XValue(x), y=alt.YValue(0), text=alt.Text("title:N"))
    title_lines = LINES_BESIDE[0] if beside else 1
    subtitle = heading.mark_text(align="left", baseline="top", fontSize=look.font_size,
                                 lineHeight=_line_px(look.font_size), color=look.muted,
                                 limit=limit, **breaks).encode(
        x=alt.XValue(x), y=alt.YValue(title_lines * _line_px(look.title_size) + 1),
        text=alt.Text("subtitle:N"))
    return alt.layer(title, *([] if look.presenter else [subtitle]), width=width,
                     height=heading_px(look, beside), name=view_name(lane.key, "heading"))


def lane_bars(lane: LaneShape, look: Look, *, width: int, legend: bool = True) -> alt.LayerChart:
    """Each iteration a bar from its start to its end, split by its decode and prefill tokens.

    Its tooltip traces the duration: compute, memory, the CPU overhead the engine added (a
    synchronous engine's whole CPU time, an overlapped one's only where it outlasts the GPU step;
    sim/cost/overhead.py) and its share of the duration, and `OTHER` = duration − max(compute,
    memory) − overhead, computed here from the bar's own fields (the Trace keeps no per-iteration
    all-reduce). For one iteration that is the rest of the time beyond the roofline's max: the
    all-reduces (tp > 1) and, calibrated, the kernels run one after another through the soft
    ridge with their floors; 0 on the plain roofline on one GPU. A bar of merged iterations sums
    their compute, memory and overhead, so there it also holds whatever the larger sum misses
    where the bound changes inside the bin. `legend`: the colours' key above the bars."""
    base = (alt.Chart(alt.Data(name=f"{lane.key}_iterations"))
            .transform_fold(list(PARTS), as_=["part_key", "tokens"])
            .transform_calculate(
                part=f"datum.part_key == 'decode_tokens' ? '{PARTS['decode_tokens']}' : "
                     f"'{PARTS['prefill_tokens']}'",
                y0="datum.part_key == 'decode_tokens' ? 0 : datum.decode_share",
                y1="datum.part_key == 'decode_tokens' ? datum.decode_share : 1",
                # max(0, ...): rounding leaves -1e-13 where the duration is exactly the max
                other_ms="max(0, datum.duration_ms - max(datum.compute_ms, datum.memory_ms)"
                         " - datum.overhead_ms)",
                overhead_share="datum.overhead_ms / datum.duration_ms"))
    color = alt.Color("part:N", title=None,
                      scale=alt.Scale(domain=list(PARTS.values()), range=[look.decode, look.prefill]),
                      legend=alt.Legend(orient="top", direction="horizontal", symbolOpacity=1)
                      if legend else None)
    # on a projector the rotated title would be taller than the bars: the legend says it
    y = alt.Y("y0:Q", scale=alt.Scale(domain=[0, 1]), title=None if look.presenter else "token share",
              axis=alt.Axis(values=[0, 1], format="%", **NO_GRID))
    tooltip = [alt.Tooltip("iteration:Q", title="first iteration", format=","),
               alt.Tooltip("iterations:Q", title="iterations in this bar", format=","),
               alt.Tooltip("start_ms:Q", title="start (ms)", format=",.2f"),
               alt.Tooltip("duration_ms:Q", title="duration (ms)", format=",.3f"),
               alt.Tooltip("decode_tokens:Q", title="decode tokens", format=","),
               alt.Tooltip("prefill_tokens:Q", title="prefill tokens", format=","),
               alt.Tooltip("compute_ms:Q", title="compute time (ms)", format=",.3f"),
               alt.Tooltip("memory_ms:Q", title="memory time (ms)", format=",.3f"),
               alt.Tooltip("overhead_ms:Q", title=OVERHEAD, format=",.3f"),
               alt.Tooltip("overhead_share:Q", title=OVERHEAD_SHARE, format=".1%"),
               alt.Tooltip("other_ms:Q", title=OTHER, format=",.3f"),
               alt.Tooltip("bound:N", title="bound (the larger time)")]
    x = _x(axis=False, field="start_ms")
    ghost = base.mark_rect(opacity=GHOST_OPACITY, clip=True).encode(
        x=x, x2=alt.X2("end_ms"), y=y, y2=alt.Y2("y1"), color=color)
    live = (base.transform_filter(f"datum.start_ms <= {NOW_MS}")
            .transform_calculate(shown_end=f"min(datum.end_ms, {NOW_MS})")
            .mark_rect(stroke=look.background, strokeWidth=0.5, clip=True)
            .encode(x=x, x2=alt.X2("shown_end"), y=y, y2=alt.Y2("y1"), color=color, tooltip=tooltip))
    return alt.layer(ghost, live, _playhead(look), width=width, height=BARS_PX[look.presenter],
                     name=view_name(lane.key, "bars"))


ROWS_PX_RANGE = (24, 400)   # the decoder block's height when fitted to a screen (rows_px)


def rows_height(rows: int, look: Look, rows_px: int | None = None) -> int:
    """The decoder block's height: `rows_px` when the figure is fitted to a screen (within
    ROWS_PX_RANGE); else 8 px a row for a few rows (at least 40 px), 160 px from 20 rows up (a
    row is then thinner: 2.5 px at 64 rows, a fraction of a pixel beyond 160)."""
    if rows_px is not None:
        return int(min(max(rows_px, ROWS_PX_RANGE[0]), ROWS_PX_RANGE[1]))
    height = max(40, min(160, 8 * max(rows, 1)))
    return round(height * 1.25) if look.presenter else height


def _ticks(lane: LaneShape) -> alt.Chart:
    return alt.Chart(alt.Data(name=f"{lane.key}_ticks"))


def _gaps_so_far(lane: LaneShape) -> alt.Chart:
    """Each gap between two ticks of a band, as much of it as the clock has reached, with the
    largest of them (`largest`)."""
    return (_ticks(lane).transform_filter(f"isValid(datum.prev_ms) && datum.prev_ms <= {NOW_MS}")
            .transform_calculate(shown_end=f"min(datum.time_ms, {NOW_MS})")
            .transform_calculate(shown="datum.shown_end - datum.prev_ms")
            .transform_joinaggregate(largest="max(shown)"))


def _waits(lane: LaneShape) -> alt.Chart:
    """Per band still running at the clock: its current gap (`wait`, ms since its last token)
    and whether that is a freeze (`frozen`: the wait exceeds STALL_MS)."""
    return (_ticks(lane).transform_filter(f"datum.time_ms <= {NOW_MS}")
            .transform_aggregate(last="max(time_ms)",
                                 groupby=["band", "row0", "row1", "decoders", "finish_ms"])
            .transform_filter(f"{NOW_MS} < datum.finish_ms")
            .transform_calculate(now_ms=NOW_MS, wait=f"{NOW_MS} - datum.last")
            .transform_calculate(frozen=f"datum.wait > {STALL_MS}"))


def _python_exponent(text: str) -> str:
    """A Vega expression of `text` (a formatted number) with its exponent in two digits at least,
    as Python writes it (1e+06, 2.13e-08; d3 writes 1e+6, 2.13e-8)."""
    for sign in "+-":
        text = f"replace({text}, regexp('e\\\\{sign}(?=\\\\d$)'), 'e{sign}0')"
    return text


def seconds_expr(ms: str) -> str:
    """sim.units.fmt_seconds as a Vega expression of a time in ms (`ms`, an expression): the lab's
    one way to write a time (four significant figures in ms, three in s and µs), so that a counter
    the browser computes reads as the words and cards Python writes ("223.9 ms", never "224 ms"
    beside them). The same operations on the same doubles (ms / 1000, then × 1000 or × 10⁶), and
    Python's switch to an exponent below 10⁻⁴ µs and its hyphen minus; d3 rounds an exact binary half up where Python
    rounds it to even (2.0625 ms: "2.063" against "2.062"), a tie no time of a run lands on."""
    s = f"(({ms}) / 1000)"
    us = f"({s} * 1000000)"
    # d3 writes a negative number with a typographic minus, Python with a hyphen
    return (f"replace(!isFinite({s}) ? '—' : "
            f"abs({s}) >= {HUGE:g} ? {_python_exponent(f'format({s}, {chr(39)}.3~g{chr(39)})')} + ' s' : "
            f"abs({s}) >= 100 ? format({s}, ',.0f') + ' s' : "
            f"abs({s}) >= 0.9995 ? format({s}, ',.3~g') + ' s' : "
            f"abs({s}) >= 0.0009995 ? format({s} * 1000, '.4~g') + ' ms' : "
            f"{us} != 0 && abs({us}) < 0.00009995 ? "
            f"{_python_exponent(f'format({us}, {chr(39)}.2~e{chr(39)})')} + ' µs' : "
            f"format({us}, '.3~g') + ' µs', '\u2212', '-')")


def _ms(ms: float) -> str:
    """A time in ms as the lab writes it (sim.units.fmt_seconds; in the chart: `seconds_expr`)."""
    return fmt_seconds(ms / 1e3)


def frozen_text(waits_ms: Sequence[float]) -> str:
    """What the freeze counter reads while the clock runs, given the current gap of each stream
    still running."""
    if not len(waits_ms):
        return "every stream has finished"
    longest = max(waits_ms)
    return f"streams frozen for {_ms(longest)}" if longest > STALL_MS else "no stream frozen"


def largest_text(largest_ms: float | None) -> str:
    """What the largest-gap counter reads; nothing (None: before any gap has begun)."""
    return "" if largest_ms is None else f"largest gap so far {_ms(largest_ms)}"


def first_token_text(arrival_ms: float, first_ms: float, t_ms: float) -> str:
    """The new request's label at the clock: its wait so far, then its TTFT."""
    if t_ms < first_ms:
        return f"waiting for its first token: {_ms(min(first_ms, t_ms) - arrival_ms)}"
    return f"TTFT {_ms(first_ms - arrival_ms)}"


def counter_texts(ticks: pd.DataFrame, t_ms: float) -> dict[str, str]:
    """The lane's counters at the clock `t_ms` from its `ticks` (DecoderRows.ticks): the same
    words the chart draws while the clock runs ("frozen", "largest", "delivered"; "" where it
    draws none), for a picture drawn frame by frame. At the end the chart says what happened
    instead of "frozen" (the lane's heading, frames.froze_text), and a film's last frame is the
    chart itself."""
    return counter_words(lane_at_clock(ticks, t_ms))


def counter_words(at: LaneAtClock) -> dict[str, str]:
    """The counters' words from a lane's numbers at a clock (frames.lane_at_clock)."""
    return {"frozen": frozen_text(list(at.waits.wait_ms)),
            "largest": largest_text(at.largest_ms),
            "delivered": f"{at.delivered:,} tokens delivered so far"}


def lane_counters(lane: LaneShape, look: Look, *, width: int) -> alt.LayerChart:
    """The live numbers over the decoder rows: how long the streams have gone without a token
    now (the longest wait among those still running), the largest gap so far, and the tokens the
    decoders have received since the prompt arrived (left out where the lane is too narrow for
    three: a projector's narrow column, whose two are set smaller)."""
    size = look.font_size + 3
    height = COUNTERS_PX[look.presenter]
    three = width * 0.31 >= 14 * size   # room for "streams frozen for 1,234 ms" in a third
    if not three:
        size = look.font_size           # two, at the labels' size: each whole in half the width
    share = 0.31 if three else 0.48
    # each counter keeps to its share of the width (`limit` cuts a longer text with an
    # ellipsis): a text that grew past the chart as the clock runs would widen the view
    text = dict(align="left", baseline="middle", fontSize=size, limit=width * share)
    if lane.decoders == 0:
        return alt.Chart(alt.Data(values=[{}])).mark_text(**text, color=look.muted).encode(
            x=alt.XValue(0), y=alt.YValue(height / 2), text=alt.TextValue("no streams running")
        ).properties(width=width, height=height, name=view_name(lane.key, "counters"))
    seen = _ticks(lane).transform_filter(f"datum.time_ms <= {NOW_MS}")
    # while the clock runs: the longest current gap among the streams still running (-1: none
    # is), in frozen_text's words
    frozen = (seen.transform_filter(f"{CLOCK} < {END}")
              .transform_aggregate(last="max(time_ms)", groupby=["band", "finish_ms"])
              .transform_calculate(wait=f"{NOW_MS} < datum.finish_ms ? {NOW_MS} - datum.last : -1")
              .transform_aggregate(wait="max(wait)")
              .transform_calculate(
                  frozen=f"datum.wait > {STALL_MS}",
                  text="datum.wait < 0 ? 'every stream has finished' : datum.frozen ? "
                       f"'streams frozen for ' + {seconds_expr('datum.wait')} : 'no stream frozen'")
              .mark_text(**text, fontWeight="bold")
              .encode(x=alt.XValue(0), y=alt.YValue(height / 2), text=alt.Text("text:N"),
                      color=alt.ColorValue(look.muted, condition={"test": "datum.frozen",
                                                                  "value": look.ink}))
              .properties(name=f"{lane.key}_frozen"))
    # at the end: what happened, the whole run's count and longest freeze (the lane's heading data,
    # the metric cards' numbers), not the streams' state at that instant
    froze = (alt.Chart(alt.Data(name=f"{lane.key}_heading")).transform_filter(f"{CLOCK} >= {END}")
             .mark_text(**text, fontWeight="bold")
             .encode(x=alt.XValue(0), y=alt.YValue(height / 2), text=alt.Text("froze:N"),
                     color=alt.ColorValue(look.muted, condition={"test": "datum.frozen_streams > 0",
                                                                 "value": look.ink}))
             .properties(name=f"{lane.key}_end_counter"))
    largest = (_gaps_so_far(lane).transform_aggregate(largest="max(shown)")
               .transform_calculate(text=f"'largest gap so far ' + {seconds_expr('datum.largest')}")
               .mark_text(**text).encode(x=alt.XValue(width * (share + 0.05)), y=alt.YValue(height / 2),
                                         text=alt.Text("text:N"), color=alt.ColorValue(look.ink))
               .properties(name=f"{lane.key}_largest"))
    delivered = (seen.transform_aggregate(tokens="sum(tokens)")
                 .transform_calculate(text="format(datum.tokens, ',') + ' tokens delivered so far'")
                 .mark_text(**text).encode(x=alt.XValue(width * 0.68), y=alt.YValue(height / 2),
                                           text=alt.Text("text:N"), color=alt.ColorValue(look.muted))
                 .properties(name=f"{lane.key}_delivered"))
    return alt.layer(frozen, froze, largest, *([delivered] if three else []), width=width,
                     height=height,
                     name=view_name(lane.key, "counters"))


def lane_rows(lane: LaneShape, look: Look, *, width: int, rows_px: int | None = None) -> alt.LayerChart:
    """Every running decoder as a thin row; a tick per token it receives, drawn as the clock
    passes it (future ticks faded). Over each row a faint grey block grows from its last token
    to the clock, and turns the freeze colour once the wait is a freeze (over STALL_MS): when the
    whole block turns at once, every stream is frozen. A freeze that has ended stays drawn. A
    dashed line marks the largest gap so far (the latest, where several are equal).
    `rows_px`: the block's height."""
    n = max(lane.rows, 1)
    height = rows_height(n, look, rows_px)
    per = "" if lane.per_row == 1 else f", {lane.per_row} per row"
    y = alt.Y("row0:Q", scale=alt.Scale(domain=[0, n], reverse=True, nice=False, zero=True),
              title=f"{lane.decoders:,} streams{per}",
              axis=alt.Axis(labels=False, ticks=False, domain=False, titleAngle=0, titleAlign="right",
                            titleBaseline="middle", titleX=-4, titleY=height / 2, **NO_GRID))
    x = _x(axis=False, field="time_ms")
    tooltip = [alt.Tooltip("decoders:Q", title="streams in this band", format=","),
               alt.Tooltip("time_ms:Q", title="token at (ms)", format=",.2f"),
               alt.Tooltip("gap_ms:Q", title="gap since the band's previous token (ms)",
                           format=",.3f"),
               alt.Tooltip("tokens:Q", title="tokens delivered", format=",")]
    ghost = (_ticks(lane).mark_rule(opacity=GHOST_OPACITY, color=look.decode, strokeWidth=1.2)
             .encode(x=x, y=y, y2=alt.Y2("row1")).properties(name=f"{lane.key}_ticks_ghost"))
    waiting = (_waits(lane).mark_rect()
               .encode(x=alt.X("last:Q"), x2=alt.X2("now_ms"), y=y, y2=alt.Y2("row1"),
                       color=alt.ColorValue(look.muted, condition={"test": "datum.frozen",
                                                                   "value": look.freeze}),
                       opacity=alt.OpacityValue(WAIT_OPACITY, condition={"test": "datum.frozen",
                                                                "value": FREEZE_OPACITY}))
               .properties(name=f"{lane.key}_waiting"))
    # a freeze that has ended stays marked, so the picture keeps it once the clock moves on
    froze = (_ticks(lane).transform_filter(f"datum.time_ms <= {NOW_MS} && datum.gap_ms > {STALL_MS}")
             .mark_rect(color=look.freeze, opacity=FREEZE_OPACITY)
             .encode(x=alt.X("prev_ms:Q"), x2=alt.X2("time_ms"), y=y, y2=alt.Y2("row1"))
             .properties(name=f"{lane.key}_froze"))
    live = (_ticks(lane).transform_filter(f"datum.time_ms <= {NOW_MS}")
            .mark_rule(color=look.decode, strokeWidth=1.5)
            .encode(x=x, y=y, y2=alt.Y2("row1"), tooltip=tooltip).properties(name=f"{lane.key}_ticks_live"))
    # the largest gap so far; of several equal ones (a chunked lane's), the latest: marking each
    # would join them into one line as long as all of them
    bracket = (_gaps_so_far(lane).transform_filter(f"datum.shown >= datum.largest - {SAME_GAP_MS}")
               .transform_joinaggregate(latest="max(prev_ms)")
               .transform_filter("datum.prev_ms >= datum.latest")
               .transform_calculate(mid="(datum.row0 + datum.row1) / 2")
               .mark_rule(color=look.ink, strokeWidth=2.5, strokeDash=[6, 3], xOffset=2, x2Offset=-2)
               .encode(x=alt.X("prev_ms:Q"), x2=alt.X2("shown_end"), y=alt.Y("mid:Q"))
               .properties(name=f"{lane.key}_largest_gap"))
    layers = [ghost, froze, waiting, live]
    if height / n >= 2.5:   # thin lines in the background colour split the ticks into rows
        layers.append(alt.Chart(alt.sequence(1, n, as_="row0"))
                      .mark_rule(color=look.background, strokeWidth=1)
                      .encode(y=y, x=alt.XValue(0), x2=alt.X2Value(width)))
    layers += [bracket, _playhead(look)]
    return alt.layer(*layers, width=width, height=height, name=view_name(lane.key, "rows"))


def lane_new_request(lane: LaneShape, look: Look, *, width: int, axis: bool = True) -> alt.LayerChart:
    """The new request's row: a tick per token, and a bracket from its arrival that grows until
    its first token (its time to first token, TTFT); `axis`: the time axis under it."""
    height = NEW_PX[look.presenter]
    y = alt.Y("stream:N", title=None, axis=alt.Axis(ticks=False, domain=False, **NO_GRID))
    # a projector's labels are larger: fewer of them, so that they never touch
    x = _x(axis=axis, field="time_ms", ticks=max(4, width // 90) if look.presenter else None)
    tokens = alt.Chart(alt.Data(name=f"{lane.key}_new"))
    tooltip = [alt.Tooltip("token:Q", format=","),
               alt.Tooltip("time_ms:Q", title="emitted at (ms)", format=",.2f"),
               alt.Tooltip("gap_ms:Q", title="gap since previous token (ms)", format=",.3f")]
    ghost = tokens.mark_tick(opacity=GHOST_OPACITY, color=look.new_request, thickness=1.2,
                             size=height * 0.7).encode(x=x, y=y).properties(name=f"{lane.key}_new_ghost")
    live = (tokens.transform_filter(f"datum.time_ms <= {NOW_MS}")
            .mark_tick(color=look.new_request, thickness=1.5, size=height * 0.7)
            .encode(x=x, y=y, tooltip=tooltip).properties(name=f"{lane.key}_new_tokens"))
    wait = (alt.Chart(alt.Data(name=f"{lane.key}_callouts"))
            .transform_calculate(first=f"isValid(datum.first_ms) ? datum.first_ms : {END} * 2000")
            .transform_calculate(end=f"min(datum.first, {NOW_MS})")
            # first_token_text's words
            .transform_calculate(label=f"{NOW_MS} < datum.first ? 'waiting for its first token: ' + "
                                       f"{seconds_expr('datum.end - datum.arrival_ms')} : 'TTFT ' + "
                                       f"{seconds_expr('datum.first - datum.arrival_ms')}"))
    bracket = wait.mark_rule(color=look.ink, strokeWidth=2, strokeDash=[4, 2]).encode(
        x=alt.X("arrival_ms:Q"), x2=alt.X2("end"), y=y)
    label = wait.mark_text(align="left", baseline="bottom", dx=2, dy=-height * 0.3, color=look.ink,
                           fontSize=look.font_size, fontWeight="bold").encode(
        x=alt.X("arrival_ms:Q"), y=y, text=alt.Text("label:N"))
    return alt.layer(ghost, live, bracket, label, _playhead(look), width=width,
                     height=height, name=view_name(lane.key, "new"))


def lane_streams(lane: LaneShape, look: Look, *, width: int, rows_px: int | None = None,
                 axis: bool = True) -> list:
    """The lane's streams: the live counters, every decoder's row, the new request's row (with
    the time axis under it when `axis`)."""
    return [lane_counters(lane, look, width=width), lane_rows(lane, look, width=width, rows_px=rows_px),
            lane_new_request(lane, look, width=width, axis=axis)]


def _lane_data(lanes: Sequence[LaneFrames], bars: bool = True) -> dict[str, pd.DataFrame]:
    data = {}
    for lane in lanes:
        if bars:
            data[f"{lane.key}_iterations"] = lane.iterations
        data.update({f"{lane.key}_ticks": lane.decoders.ticks, f"{lane.key}_new": lane.new_request,
                     f"{lane.key}_callouts": lane.callouts, f"{lane.key}_heading": lane.heading})
    return data


# Heights in CSS pixels of the parts of a lane, by look.presenter. LANE_PX and STREAMS_LANE_PX,
# what each lane draws besides its decoder rows, were measured on rendered figures (tests/charts
# check the sum against vl-convert's); a presenter's lanes share one legend (above the first lane)
# and one time axis (under the last), SHARED_PX for both.
HEADING_PX = {False: 34, True: 26}
BARS_PX = {False: 64, True: 36}
COUNTERS_PX = {False: 26, True: 30}
NEW_PX = {False: 22, True: 28}
LANE_PX = {False: 281, True: 188}          # title, legend, bars, counters, new request, axis
STREAMS_LANE_PX = {False: 168, True: 128}  # the same without the bars (the streams view)
SHARED_PX = {False: 0, True: 76}
STREAMS_SHARED_PX = {False: 0, True: 49}


def _fixed_px(lanes: int, look: Look, bars: bool, beside: bool = False) -> int:
    """What `lanes` lanes one above the other draw besides their decoder rows, in CSS pixels
    (`beside`: what each lane beside another draws, its own legend, axis and longer heading)."""
    per_lane, shared = (LANE_PX, SHARED_PX) if bars else (STREAMS_LANE_PX, STREAMS_SHARED_PX)
    longer = heading_px(look, True) - heading_px(look, False) if beside else 0
    return (per_lane[look.presenter] + longer) * lanes + shared[look.presenter]


def figure_height(lanes: Sequence[LaneFrames], look: Look, *, bars: bool = True,
                  rows_px: int | None = None, beside: bool = False) -> int:
    """The figure's height in CSS pixels: what a player's frame must hold."""
    rows = [rows_height(lane.decoders.rows, look, rows_px) for lane in lanes]
    if beside:
        return _fixed_px(1, look, bars, beside=True) + max(rows, default=0)
    return _fixed_px(len(lanes), look, bars) + sum(rows)


def rows_to_fit(lanes: Sequence[LaneFrames], look: Look, height_px: float, *,
                bars: bool = True, beside: bool = False) -> int:
    """The decoder block's height (`rows_px`) that makes the figure `height_px` tall, within
    ROWS_PX_RANGE (a screen too short for that gets a figure taller than it)."""
    stacked = 1 if beside else max(len(lanes), 1)
    room = (height_px - _fixed_px(stacked, look, bars, beside)) / stacked
    return int(min(max(room, ROWS_PX_RANGE[0]), ROWS_PX_RANGE[1]))



RESOLVE = alt.Resolve(scale=alt.ScaleResolveMap(x="shared", y="independent", color="independent",
                                                opacity="independent"))


@functools.lru_cache(maxsize=64)
def _chart(shapes: tuple[LaneShape, ...], look: Look, width: int, bars: bool, rows_px: int | None,
           beside: bool):
    """The chart for lanes of these shapes, and its Vega-Lite dict: built once per shape."""
    lanes = []
    for index, lane in enumerate(shapes):
        # a presenter's lanes one above the other share one legend and one time axis
        shared = look.presenter and not beside
        first, last = not shared or index == 0, not shared or index == len(shapes) - 1
        lanes.append([lane_heading(lane, look, width=width, beside=beside),
                      *([lane_bars(lane, look, width=width, legend=first)] if bars else []),
                      *lane_streams(lane, look, width=width, rows_px=rows_px, axis=last)])
    if beside:
        chart = alt.hconcat(*(alt.vconcat(*parts, resolve=RESOLVE) for parts in lanes),
                            spacing=BESIDE_GAP_PX, resolve=RESOLVE)
    else:
        chart = alt.vconcat(*(part for parts in lanes for part in parts), resolve=RESOLVE)
    return chart, chart.to_dict(validate=False)


def _clocked(lanes: Sequence[LaneFrames], look: Look, t_max: float, width: int,
             bars: bool, rows_px: int | None, beside: bool) -> Figure:
    rows_px = None if rows_px is None else rows_height(0, look, rows_px)
    chart, as_dict = _chart(tuple(lane.shape for lane in lanes), look, int(width), bars, rows_px,
                            beside)
    t_max = float(t_max)
    return Figure(chart, look, _lane_data(lanes, bars), {CLOCK: t_max, END: t_max}, as_dict)


def side_by_side(lanes: Sequence[LaneFrames], look: Look, *, t_max: float,
                 width: int = 900, rows_px: int | None = None, beside: bool = False) -> Figure:
    """Every lane's bars over its streams, one clock `t` running from 0 to `t_max` seconds, the
    lanes one above the other on one time axis or `beside` each other (`width`: each lane's);
    `rows_px`: each decoder block's height (rows_to_fit), else by its rows."""
    return _clocked(lanes, look, t_max, width, True, rows_px, beside)


def streams_only(lanes: Sequence[LaneFrames], look: Look, *, t_max: float,
                 width: int = 900, rows_px: int | None = None, beside: bool = False) -> Figure:
    """Just the token streams of every lane (the `streams` export view), each under its title."""
    return _clocked(lanes, look, t_max, width, False, rows_px, beside)
