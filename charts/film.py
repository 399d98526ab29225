"""The GIF of a figure: the timeline's clock `t` animated as the in-app player does, each frame
composed from a few vl-convert renders rather than one render per frame (`python -m
benchmarks.export_bench` prints its time and size)."""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import vl_convert as vlc
from PIL import Image, ImageColor, ImageDraw

from sim.errors import InputError

from .export import convert
from .figure import Figure
from .frames import LaneAtClock, lane_at_clock
from .theme import FONT, Look
from .timeline import (
    CLOCK,
    COUNTERS_PX,
    END,
    FREEZE_OPACITY,
    NEW_PX,
    NOW_MS,
    STALL_MS,
    WAIT_OPACITY,
    counter_words,
    first_token_text,
    view_name,
)

GIF_FRAMES = 48
GIF_FRAME_MS = 80      # 12.5 frames per second
GIF_HOLD_MS = 2000     # the last frame stays up before the loop restarts
GIF_COLOURS = 64       # one palette for every frame (_Palette)
PALETTE_FRAMES = 5     # frames whose colours make it


# --- GIF: one picture revealed up to the clock, what moves drawn on it frame by frame ----------
# Drawing every frame with vl-convert costs a whole render each (about 0.2 s at 900 px). Instead
# each layer of the clocked figure is sorted by how it reads the clock: *still* (it does not:
# headings, axes, the preview of what is to come), *revealed* (it draws what the clock has passed,
# up to the clock: bars and tokens) or *moving* (any other use: the playhead, the waiting blocks,
# the largest gap, the new request's wait and the counters). Still and revealed layers are drawn
# twice in all, with the clock at 0 and at the end, and each frame takes the end's picture left
# of the clock, the start's right of it (revealed layers above a moving one, in a render of their
# own, go over it the same way). The moving layers are drawn on that per frame from the lane's
# numbers at the clock (frames.lane_at_clock: the lab's definition of a freeze), their words set
# by vl-convert in one render for every frame, so they wear the chart's own font. The last frame
# is the whole figure, drawn once. Frames go to the GIF writer one at a time, in 64 colours.
EXPRESSION_KEYS = ("filter", "calculate", "expr", "test")
_QUOTED = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""")
_REVEALS = (re.compile(rf"datum\.\w+ <= {re.escape(NOW_MS)}"),
            re.compile(rf"min\(datum\.\w+, {re.escape(NOW_MS)}\)"))
STILL, REVEALED, MOVING = "still", "revealed", "moving"
ROW_BY_ROW = {"filter", "calculate", "fold", "flatten", "as"}   # transforms that keep rows apart
MARGIN_PX = 24        # room around a view for marks that reach past its edges (strokes, labels)
SHEET_PX = 2000       # the width of the render that sets every frame's words
EM_GUESS = 0.75       # a character's width at most, in font sizes (Liberation Sans: about 0.55)
_GUIDES = {"x": "axis", "y": "axis", "color": "legend", "opacity": "legend", "fill": "legend",
           "stroke": "legend", "shape": "legend", "size": "legend", "strokeDash": "legend"}


def _expressions(node) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in EXPRESSION_KEYS and isinstance(value, str):
                yield value
            else:
                yield from _expressions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _expressions(value)


def _code(expression: str) -> str:
    """The expression without its string literals (a word in a label is not the clock)."""
    return _QUOTED.sub("''", expression)


def _reads_clock(expression: str) -> bool:
    return re.search(rf"(?<![\w.$]){CLOCK}(?![\w$])", _code(expression)) is not None


def layer_kind(layer: dict) -> str:
    """STILL, REVEALED or MOVING (see above). A revealed layer draws its data row by row (no
    aggregate), each mark kept or cut by where the clock is."""
    clocked = [e for e in _expressions(layer) if _reads_clock(e)]
    if not clocked:
        return STILL
    per_datum = "layer" not in layer and all(set(step) <= ROW_BY_ROW
                                             for step in layer.get("transform", []))
    if per_datum and all(any(r.fullmatch(e) for r in _REVEALS) for e in clocked):
        return REVEALED
    return MOVING


def _at_clock(node, t: float):
    """A copy of a spec fragment with the clock replaced by the value `t` (s), and unnamed (a
    copy drawn several times must not repeat a name)."""
    if isinstance(node, list):
        return [_at_clock(value, t) for value in node]
    if not isinstance(node, dict):
        return node
    named = "mark" in node or "layer" in node
    return {key: (_set_clock(value, t) if key in EXPRESSION_KEYS and isinstance(value, str)
                  else _at_clock(value, t))
            for key, value in node.items() if not (named and key == "name")}


def _set_clock(expression: str, t: float) -> str:
    parts = re.split(f"({_QUOTED.pattern})", expression)
    return "".join(part if index % 2 else re.sub(rf"(?<![\w.$]){CLOCK}(?![\w$])", f"({t!r})", part)
                   for index, part in enumerate(parts))


UNSEEN = 1e-3   # an opacity under half a level of 8-bit colour (at 0, Vega drops a stroke's room)


def _unseen(layer: dict) -> dict:
    """The layer drawn transparent: it takes its room, and shows nothing."""
    mark = layer["mark"] if isinstance(layer["mark"], dict) else {"type": layer["mark"]}
    encoding = {channel: value for channel, value in layer.get("encoding", {}).items()
                if channel not in ("opacity", "fillOpacity", "strokeOpacity")}
    return {**layer, "mark": {**mark, "opacity": UNSEEN}, "encoding": encoding}


def _bare(layer: dict) -> dict:
    """The layer without axes or legends: a transparent overlay for a view drawn elsewhere."""
    encoding = {channel: dict(value, **{_GUIDES[channel]: None})
                if channel in _GUIDES and isinstance(value, dict) and "field" in value else value
                for channel, value in layer.get("encoding", {}).items()}
    return {**layer, "encoding": encoding} if encoding else layer


@dataclass(frozen=True)
class _Parts:
    """The clocked figure taken apart: `base`, its spec with each view's layers below its first
    moving one; `over`, per view, the still and revealed layers above a moving one (a view of
    their own, drawn transparent); `moving`, the views with moving layers."""
    base: dict
    over: dict[str, dict]
    moving: frozenset[str]


def _parts(spec: dict) -> _Parts:
    views = spec.get("vconcat")
    if END not in _params(spec) or not views or not all("name" in view for view in views):
        raise InputError("a GIF animates a timeline: named views, one above the other, with its "
                         f"clock {CLOCK!r} and the axis' end {END!r}")
    base, over, moving = [], {}, set()
    for view in map(_as_layers, views):
        layers = view["layer"]
        kinds = [layer_kind(layer) for layer in layers]
        first = kinds.index(MOVING) if MOVING in kinds else len(layers)
        # what is drawn over the base keeps its place there, unseen: its marks' reach (a label
        # above a view) moves the views below, in the base as in the whole figure
        base.append({**view, "layer": layers[:first] + [_unseen(layer) for layer in layers[first:]]})
        if first < len(layers):
            moving.add(view["name"])
            above = [_bare(layer) for layer, kind in zip(layers[first:], kinds[first:])
                     if kind != MOVING]
            if above:
                over[view["name"]] = {**{k: v for k, v in view.items() if k != "name"},
                                      "layer": above}
    return _Parts({**spec, "vconcat": base}, over, frozenset(moving))


def _as_layers(view: dict) -> dict:
    """A view of one mark as a view of one layer (a lane without streams says so in one)."""
    if "layer" in view:
        return view
    size = ("name", "width", "height")
    return {**{k: view[k] for k in size if k in view},
            "layer": [{k: v for k, v in view.items() if k not in size}]}


def _params(spec: dict) -> set[str]:
    """The names of the spec's top-level parameters."""
    return {param["name"] for param in spec.get("params", [])}


def _on_canvas(image: Image.Image, size: tuple[int, int], background: str) -> Image.Image:
    if image.size == size:
        return image
    canvas = Image.new("RGB", size, background)
    canvas.paste(image, (0, 0))
    return canvas


def _rgba(png_bytes: bytes) -> Image.Image:
    """vl-convert's PNG with its colours un-premultiplied (it writes them multiplied by alpha)."""
    image = Image.open(io.BytesIO(png_bytes)).convert("RGBA")
    return Image.frombytes("RGBa", image.size, image.tobytes()).convert("RGBA")


def _with_clock(spec: dict, t: float) -> dict:
    return {**spec, "params": [dict(p, value=t) if p["name"] == CLOCK else p for p in spec["params"]]}


def _boxes(scenegraph: dict) -> dict[str, tuple[float, float, float, float]]:
    """Each named view's plot box (x, y, width, height) in CSS pixels of the picture."""
    boxes = {}

    def visit(mark: dict, x0: float, y0: float) -> None:
        if mark.get("marktype") != "group":
            return
        for item in mark.get("items", []):
            x, y = x0 + item.get("x", 0), y0 + item.get("y", 0)
            if mark.get("name", "").endswith("_group"):
                boxes[mark["name"][:-len("_group")]] = (x, y, item.get("width", 0),
                                                        item.get("height", 0))
            for child in item.get("items", []):
                visit(child, x, y)

    visit(scenegraph["scenegraph"], *scenegraph["origin"])
    return boxes


def _sheet(spec: dict, cells: list[dict], scale: float) -> tuple[Image.Image, list[int]]:
    """Views drawn transparent one under another, without axes or legends, and where each one's
    box starts (CSS pixels; each has MARGIN_PX of room on every side)."""
    vl = {k: v for k, v in spec.items() if k not in ("vconcat", "resolve", "title", "params")}
    vl.update(vconcat=cells, spacing=2 * MARGIN_PX, bounds="flush", background=None,
              params=[p for p in spec["params"] if p["name"] != CLOCK])
    vega = convert(vlc.vegalite_to_vega, vl)
    tops = [MARGIN_PX + int(sum(c["height"] + 2 * MARGIN_PX for c in cells[:index]))
            for index in range(len(cells))]
    vega.update(autosize="none", width=max(c["width"] for c in cells),
                height=tops[-1] + cells[-1]["height"] - MARGIN_PX, padding=MARGIN_PX)
    return _rgba(convert(vlc.vega_to_png, vega, scale=scale)), tops


@dataclass(frozen=True)
class _Words:
    """A line of text the clock changes, in the figure's font: drawn at `x` (left) and `y` (its
    `baseline`: "middle" or "bottom") of `view`'s box, CSS pixels."""
    view: str
    x: float
    y: float
    text: str
    size: int
    colour: str
    bold: bool = False
    baseline: str = "middle"
    limit: float = 0.0           # cut with an ellipsis past this width (0: never)

    @property
    def key(self) -> tuple:
        return (self.text, self.size, self.colour, self.bold, self.baseline, self.limit)


def _set_words(words: list[_Words], scale: float) -> tuple[dict[tuple, Image.Image], int]:
    """Each distinct line of `words` set once, all in one vl-convert render, and cut apart: by
    (text, style) a transparent piece `slot_h` CSS pixels tall whose text sits at (0,
    `_anchor`). A line's room is a generous guess at its width (EM_GUESS a character), within
    its limit. Returns the pieces and `slot_h`."""
    lines = list(dict.fromkeys(w.key for w in words))
    slot_h = 2 * max(w.size for w in words)
    rows, pieces, x, y = [], {}, 0, 0
    for key in lines:
        text, size, colour, bold, baseline, limit = key
        width = math.ceil(min(limit or math.inf, len(text) * size * EM_GUESS)) + 4
        if x and x + width > SHEET_PX:
            x, y = 0, y + slot_h
        rows.append({"x": x, "y": y + _anchor(baseline, slot_h),
                     "text": text, "colour": colour, "style": f"{size}/{bold}/{baseline}/{limit}"})
        pieces[key] = (x, y, width)
        x += width
    layers = []
    for style in dict.fromkeys(row["style"] for row in rows):
        size, bold, baseline, limit = style.split("/")
        layers.append({"transform": [{"filter": {"field": "style", "equal": style}}],
                       "mark": {"type": "text", "align": "left", "baseline": baseline,
                                "fontSize": int(size), "fontWeight": "bold" if bold == "True"
                                else "normal", "limit": float(limit), "font": FONT},
                       "encoding": {"x": {"field": "x", "type": "quantitative", "scale": None},
                                    "y": {"field": "y", "type": "quantitative", "scale": None},
                                    "text": {"field": "text"},
                                    "color": {"field": "colour", "type": "nominal", "scale": None}}})
    spec = {"data": {"values": rows}, "layer": layers, "width": SHEET_PX, "height": y + slot_h,
            "background": None, "padding": 0, "autosize": {"type": "none"},
            "config": {"view": {"stroke": None}}}
    sheet = _rgba(convert(vlc.vegalite_to_png, spec, scale=scale))
    return {key: sheet.crop((round(x * scale), round(y * scale), round((x + width) * scale),
                             round((y + slot_h) * scale)))
            for key, (x, y, width) in pieces.items()}, slot_h


def _anchor(baseline: str, slot_h: int) -> float:
    """Where a piece's text sits (its baseline) from the piece's top, CSS pixels."""
    return slot_h / 2 if baseline == "middle" else slot_h * 3 / 4


@dataclass(frozen=True)
class _Lane:
    """One lane's data the clock moves through, by the figure's dataset names."""
    key: str
    ticks: pd.DataFrame
    callouts: pd.DataFrame

    @property
    def rows(self) -> int:
        return max(int(self.ticks.row1.max()), 1) if len(self.ticks) else 1

    def counters(self, at: LaneAtClock, look: Look, width: float) -> list[_Words]:
        """The counters over the rows, as the chart lays them out (timeline.lane_counters), with
        the lane's numbers at the clock."""
        size = look.font_size + 3
        three = width * 0.31 >= 14 * size
        size = size if three else look.font_size
        share = 0.31 if three else 0.48
        view, y = view_name(self.key, "counters"), COUNTERS_PX[look.presenter] / 2
        said = counter_words(at)
        frozen = at.frozen_ms is not None
        words = [_Words(view, 0, y, said["frozen"], size, look.ink if frozen else look.muted,
                        bold=True, limit=width * share)]
        if said["largest"]:
            words.append(_Words(view, width * (share + 0.05), y, said["largest"], size, look.ink,
                                limit=width * share))
        if three:
            words.append(_Words(view, width * 0.68, y, said["delivered"], size, look.muted,
                                limit=width * share))
        return words

    def first_token_wait(self, t_ms: float, t_end_ms: float) -> list[tuple[float, float, str]]:
        """The new request's wait at the clock: (arrival, how far the bracket reaches, label)."""
        out = []
        for arrival, first in zip(self.callouts.arrival_ms, self.callouts.first_ms):
            first = 2 * t_end_ms if pd.isna(first) else first
            out.append((float(arrival), float(min(first, t_ms)),
                        first_token_text(arrival, first, t_ms)))
        return out


class _Film:
    """The pictures a GIF's frames are composed from, and how to compose the frame at a clock."""

    def __init__(self, figure: Figure, times: list[float], scale: float):
        spec = figure.spec()
        self.look, self.scale, self.times = figure.look, scale, times
        self.parts = parts = _parts(spec)
        self.t_end = float(figure.params[END])
        self.lanes = [_Lane(name[:-len("_ticks")], frame, figure.data.get(
            f"{name[:-len('_ticks')]}_callouts", pd.DataFrame(columns=["arrival_ms", "first_ms"])))
            for name, frame in figure.data.items() if name.endswith("_ticks")]
        # each lane's numbers at each frame's clock, once
        self.states = [{lane.key: lane_at_clock(lane.ticks, t * 1e3) for lane in self.lanes}
                       for t in times]
        widths = {view["name"]: view["width"] for view in spec["vconcat"]}
        self.words = [self._words(t * 1e3, state, widths) for t, state in zip(times, self.states)]
        over = list(parts.over.items())
        # the end's picture is drawn a hair before the end: at the end the playhead goes, and
        # with it a pixel or two of the layout (the last frame is the whole figure, drawn once)
        before_end = float(np.nextafter(self.t_end, 0.0))
        cells = [_at_clock(view, t) for t in (before_end, 0.0) for _, view in over]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            layout = pool.submit(convert, vlc.vegalite_to_scenegraph, _with_clock(parts.base, before_end))
            pictures = [pool.submit(self._picture, _with_clock(parts.base, t))
                        for t in (before_end, 0.0)]
            if times[-1] >= self.t_end:
                pictures.append(pool.submit(self._picture, _with_clock(spec, self.t_end)))
            sheet = pool.submit(_sheet, spec, cells, scale) if cells else None
            flat = [w for frame in self.words for w in frame]
            words = pool.submit(_set_words, flat, scale) if flat else None
            self.boxes = _boxes(layout.result())
            drawn = [p.result() for p in pictures]
            # each frame on one canvas, the largest of them, as wide as the whole figure's PNG
            # where there is one (export.fitted sets that width; the playhead just before the
            # end reaches a pixel past it, into the margin)
            size = (drawn[2].width if len(drawn) > 2 else max(p.width for p in drawn),
                    max(p.height for p in drawn))
            self.past, self.future, *end = (_on_canvas(p, size, self.look.background) for p in drawn)
            self.end = end[0] if end else None
            self.over = {}
            if sheet is not None:
                image, tops = sheet.result()
                half = len(over)
                for index, (name, view) in enumerate(over):
                    self.over[name] = tuple(self._cut(image, tops[i], view) for i in (index, index + half))
            self.pieces, self.slot_h = words.result() if words else ({}, 0)

    def _picture(self, spec: dict) -> Image.Image:
        return Image.open(io.BytesIO(convert(vlc.vegalite_to_png, spec, scale=self.scale))).convert("RGB")

    def _cut(self, image: Image.Image, top: int, view: dict) -> Image.Image:
        s = self.scale
        return image.crop((0, round((top - MARGIN_PX) * s), round((view["width"] + 2 * MARGIN_PX) * s),
                           round((top + view["height"] + MARGIN_PX) * s)))

    def _words(self, t_ms: float, state: dict[str, LaneAtClock],
               widths: dict[str, float]) -> list[_Words]:
        words = []
        for lane in self.lanes:
            counters = view_name(lane.key, "counters")
            if counters in self.parts.moving:
                words += lane.counters(state[lane.key], self.look, widths[counters])
            new = view_name(lane.key, "new")
            if new in self.parts.moving:
                dy = -NEW_PX[self.look.presenter] * 0.3
                x_of = widths[new] / (self.t_end * 1e3)
                words += [_Words(new, arrival * x_of + 2, NEW_PX[self.look.presenter] / 2 + dy, label,
                                 self.look.font_size, self.look.ink, bold=True, baseline="bottom")
                          for arrival, _, label in lane.first_token_wait(t_ms, self.t_end * 1e3)]
        return words

    # --- one frame ---
    def _x(self, view: str, ms: float) -> float:
        x, _, width, _ = self.boxes[view]
        return (x + ms / (self.t_end * 1e3) * width) * self.scale

    def _y(self, view: str, value: float) -> float:
        return (self.boxes[view][1] + value) * self.scale

    def frame(self, index: int) -> Image.Image:
        """The picture at the clock `times[index]`: the end's left of the clock, the start's
        right of it, then what moves, in the order the chart draws it."""
        t = self.times[index]
        if t >= self.t_end and self.end is not None:
            return self.end.copy()
        t_ms, s, state = t * 1e3, self.scale, self.states[index]
        frame = self.future.copy()
        for name, (x, y, width, height) in self.boxes.items():
            cut = min(self._x(name, t_ms), (x + width) * s)
            box = (round(x * s), round((y - MARGIN_PX) * s), math.ceil(cut) + 1,
                   round((y + height + MARGIN_PX) * s))
            if box[2] > box[0]:
                frame.paste(self.past.crop(box), box[:2])
        draw = ImageDraw.Draw(frame, "RGBA")
        for lane in self.lanes:
            if view_name(lane.key, "rows") in self.parts.moving:
                self._blocks(draw, lane, state[lane.key], t_ms)
        for name, (past, future) in self.over.items():
            x, y = self.boxes[name][:2]
            at = (round((x - MARGIN_PX) * s), round((y - MARGIN_PX) * s))
            layer = future.copy()
            cut = math.ceil(self._x(name, t_ms)) + 1 - at[0]
            if cut > 0:
                layer.paste(past.crop((0, 0, min(cut, past.width), past.height)), (0, 0))
            frame.paste(layer, at, layer)          # over what is there, by its alpha
        draw = ImageDraw.Draw(frame)
        for lane in self.lanes:
            self._brackets(draw, lane, state[lane.key], t_ms)
        for words in self.words[index]:
            self._paste_words(frame, words)
        for lane in self.lanes:
            self._playhead(draw, lane, t_ms)
        return frame

    def _blocks(self, draw: ImageDraw.ImageDraw, lane: _Lane, at: LaneAtClock, t_ms: float) -> None:
        """Freezes that have ended, then each running band's wait, as the chart shades them."""
        view = view_name(lane.key, "rows")
        n, height = lane.rows, self.boxes[view][3]

        def block(x0: float, x1: float, row0: float, row1: float, frozen: bool) -> None:
            left, right = round(self._x(view, x0)), round(self._x(view, x1))
            if right > left:
                colour = (ImageColor.getrgb(self.look.freeze) + (round(255 * FREEZE_OPACITY),) if frozen
                          else ImageColor.getrgb(self.look.muted) + (round(255 * WAIT_OPACITY),))
                draw.rectangle((left, round(self._y(view, row0 / n * height)), right - 1,
                                round(self._y(view, row1 / n * height)) - 1), fill=colour)

        for row in at.freezes.itertuples():
            block(row.prev_ms, row.time_ms, row.row0, row.row1, frozen=True)
        for row in at.waits.itertuples():
            block(row.last_ms, t_ms, row.row0, row.row1, frozen=row.wait_ms > STALL_MS)

    def _brackets(self, draw: ImageDraw.ImageDraw, lane: _Lane, at: LaneAtClock, t_ms: float) -> None:
        """The largest gaps so far, and the new request's wait for its first token."""
        ink, s = self.look.ink, self.scale
        rows_view, new_view = view_name(lane.key, "rows"), view_name(lane.key, "new")
        if rows_view in self.parts.moving:
            # each largest gap so far, 2 px short of each end: equal gaps side by side read as
            # several, not one
            for gap in at.largest.itertuples():
                mid = (gap.row0 + gap.row1) / 2 / lane.rows * self.boxes[rows_view][3]
                _dashed(draw, self._x(rows_view, gap.prev_ms) + 2 * s,
                        self._x(rows_view, gap.end_ms) - 2 * s, self._y(rows_view, mid),
                        (6 * s, 3 * s), round(2.5 * s), ink)
        if new_view in self.parts.moving:
            middle = self._y(new_view, NEW_PX[self.look.presenter] / 2)
            for arrival, end, _ in lane.first_token_wait(t_ms, self.t_end * 1e3):
                _dashed(draw, self._x(new_view, arrival), self._x(new_view, end), middle,
                        (4 * s, 2 * s), round(2 * s), ink)

    def _playhead(self, draw: ImageDraw.ImageDraw, lane: _Lane, t_ms: float) -> None:
        """A rule at the clock over the lane's bars and rows, on top of everything."""
        s = self.scale
        for part in ("bars", "rows", "new"):
            view = view_name(lane.key, part)
            if view in self.parts.moving:
                x = self._x(view, t_ms)
                top, height = self.boxes[view][1], self.boxes[view][3]
                draw.line((x, top * s, x, (top + height) * s), fill=self.look.ink,
                          width=max(1, round(1.5 * s)))

    def _paste_words(self, frame: Image.Image, words: _Words) -> None:
        x, y = self.boxes[words.view][:2]
        s = self.scale
        piece = self.pieces[words.key]
        frame.paste(piece, (
            round((x + words.x) * s), round((y + words.y - _anchor(words.baseline, self.slot_h)) * s)),
            piece)


def _dashed(draw: ImageDraw.ImageDraw, x0: float, x1: float, y: float, dash: tuple[float, float],
            width: int, colour: str) -> None:
    """A horizontal dashed rule from x0 to x1, dashes from x0 (as Vega strokes a rule)."""
    on, off = dash
    x = x0
    while x < x1:
        draw.line((x, y, min(x + on, x1), y), fill=colour, width=max(1, width))
        x += on + off


class _Palette:
    """One palette for every frame (no flicker): the commonest colours of a few frames (the
    first, the last and PALETTE_FRAMES in all, evenly apart), so the
    background, the ink and each mark's colour are exact and only the blends at edges go to the
    nearest (Pillow's own mapping is approximate: it put white on a near-white). After them
    the background again twice, indices `n` and `n + 1`, which no pixel maps to
    (`_written_whole` uses them)."""

    def __init__(self, images: list[Image.Image]):
        counts: dict[tuple, int] = {}
        for image in images:
            for count, colour in image.getcolors(image.width * image.height):
                counts[colour] = counts.get(colour, 0) + count
        self.colours = np.array(sorted(counts, key=counts.get, reverse=True)[:GIF_COLOURS - 2])
        self.n = len(self.colours)
        self.flat = [int(c) for c in np.concatenate([self.colours, self.colours[:1], self.colours[:1]]).ravel()]
        self.lookup = np.full(1 << 24, 255, np.uint8)   # 0xRRGGBB -> index, 255 until first seen

    def indices(self, image: Image.Image) -> np.ndarray:
        rgb = np.asarray(image, np.uint32)
        packed = rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2]
        found = self.lookup[packed]
        new = np.unique(packed[found == 255])
        if len(new):
            colours = np.stack([new >> 16, new >> 8 & 255, new & 255], axis=1).astype(int)
            distance = ((colours[:, None, :] - self.colours[None, :, :]) ** 2).sum(axis=2)
            self.lookup[new] = distance.argmin(axis=1)
            found = self.lookup[packed]
        return found


def _written_whole(frames: Iterator[np.ndarray], palette: _Palette) -> Iterator[Image.Image]:
    """Each frame after the first with the pixels it shares with the one before made
    transparent (index `n + 1`): most of a frame is what the last one showed, and a run of one
    index is what a GIF stores in a few bytes. Its corners alternate between the background's
    two indices (the first frame's corner, in the figure's padding, and `n`), so that every
    frame differs from the last at its corners and Pillow writes it whole, the canvas' size,
    rather than cropped to what changed. One frame at a time: only Pillow keeps them all."""
    previous = None
    for index, frame in enumerate(frames):
        if previous is None:
            background, written = frame[0, 0], frame
        else:
            written = np.where(frame == previous, palette.n + 1, frame).astype(np.uint8)
            written[0, 0] = written[-1, -1] = palette.n if index % 2 else background
        previous = frame
        image = Image.fromarray(written, "P")
        image.putpalette(palette.flat)
        yield image


def gif(figure: Figure, t_max: float, frames: int = GIF_FRAMES, scale: float = 1.0) -> bytes:
    """`frames` images with the clock going from 0 to `t_max`, looping, every one the same
    size (the figure's) and written whole. A frame is composed, mapped to the palette and
    written one at a time (its full colours are never all kept: 3 bytes a pixel a frame)."""
    if CLOCK not in figure.params:
        raise InputError(f"the figure has no clock {CLOCK!r} to animate")
    count = max(2, int(frames))
    times = [float(t) for t in np.linspace(0.0, t_max, count)]
    film = _Film(figure, times, scale)
    out = io.BytesIO()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        samples = sorted({round(i * (count - 1) / (PALETTE_FRAMES - 1)) for i in range(PALETTE_FRAMES)})
        palette = _Palette(list(pool.map(film.frame, samples)))
        written = _written_whole(pool.map(lambda i: palette.indices(film.frame(i)), range(count)),
                                 palette)
        durations = [GIF_FRAME_MS] * (count - 1) + [GIF_HOLD_MS]
        # disposal 1: each frame is drawn over the last, so its transparent pixels show it
        next(written).save(out, format="GIF", save_all=True, append_images=written,
                           duration=durations, loop=0, disposal=1, transparency=palette.n + 1,
                           optimize=False)
    return out.getvalue()
