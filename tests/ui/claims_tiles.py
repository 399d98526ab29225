"""The Roofline page's words on GEMM tiles, checked against the cost model's prices (called by
test_claims's scenarios): the rows each named budget computes are its iteration's tokens rounded
up to whole tiles (worked out here, not by the code under test), the empty rows are the rest,
their time is the iteration's less the same one with its token GEMMs on exactly its tokens, and
the whole tiles beside a ragged budget are priced and judged against the target as said."""

from __future__ import annotations

import math
import re

from sim.cost.iteration import MODE_NAMES
from sim.studies.budget import fused_iteration, largest_budget_within
from sim.units import fmt_percent, fmt_seconds
from ui.learn.roofline_words import tiles_words

from .claims_text import TIME, number, plain

RAGGED = re.compile(rf"(Largest budget within the target|Your budget), ([\d,]+),(?: holds .*?; it)? "
                    rf"computes ⌈([\d,]+) / (\d+)⌉ × (\d+) = ([\d,]+) rows, ([\d,]+) of them empty: "
                    rf"{TIME} of its {TIME} iteration \(([\d.,]+%)\)\.(?: The whole tiles beside "
                    rf"it: (.*?), with no empty row\.)?")
WHOLE = re.compile(r"(Largest budget within the target|Your budget), ([\d,]+),(?: holds .*?; it)? "
                   r"fills ([\d,]+) whole tiles? of (\d+) rows: no row is empty\.")
BESIDE = re.compile(rf"([\d,]+) \({TIME}, (within|over) the target\)")


def tile_for(tokens: int, tile: int) -> int:
    """The tile a GEMM of `tokens` rows runs on: the mode's, or below it the smallest power of
    two from 16 up that holds them."""
    if tokens >= tile:
        return tile
    return max(16, 2 ** math.ceil(math.log2(tokens)))


def check_tiles(s, tpot_s: float = 0.025) -> list[str]:
    cost = s.cost_model()
    d, ctx, p = s.decodes, s.context, s.prompt
    largest = largest_budget_within(cost, d, ctx, tpot_s, p)
    text = plain(tiles_words(cost, d, ctx, p, s.budget, largest, tpot_s))
    named = {"Largest budget within the target": largest, "Your budget": s.budget}
    tile = cost.gemm_tile
    if tile is None:
        name = MODE_NAMES[cost.mode].lower()
        return [] if f"The {name} mode has no tiles" in text else \
            [f"the {cost.mode} mode's tile words do not say it has none: {text!r}"]
    problems = []

    def price(budget: int):
        it = fused_iteration(d, ctx, p, budget)
        aggregates = cost.aggregates(it)
        return it.tokens, cost.price(it).time_s, cost.time(*aggregates, token_tiles=False)[2]

    said = set()
    for kind, budget, shown_tokens, used, used_again, rows, empty, empty_t, time_t, share, beside \
            in RAGGED.findall(text):
        b = number(budget)
        said.add(kind)
        tokens, time_s, exact_s = price(b)
        expected = tile_for(tokens, tile)
        want_rows = math.ceil(tokens / expected) * expected
        if named[kind] != b:
            problems.append(f"{kind} is {named[kind]}, the words say {b}")
        if (number(shown_tokens), number(used), number(used_again)) != (tokens, expected, expected):
            problems.append(f"{b}: ⌈{shown_tokens} / {used}⌉ is not {tokens} tokens on a tile of "
                            f"{expected}")
        if number(rows) != want_rows or number(empty) != want_rows - tokens or want_rows == tokens:
            problems.append(f"{b}: {rows} rows, {empty} empty; {tokens} tokens compute {want_rows}")
        if (time_t, empty_t, share) != (fmt_seconds(time_s), fmt_seconds(time_s - exact_s),
                                        fmt_percent((time_s - exact_s) / time_s)):
            problems.append(f"{b}: its iteration {time_t} with {empty_t} empty ({share}); priced "
                            f"{fmt_seconds(time_s)}, {fmt_seconds(time_s - exact_s)} empty")
        for whole, t, verdict in BESIDE.findall(beside):
            w = number(whole)
            w_tokens, w_time, _ = price(w)
            if w % expected or abs(w - tokens) >= expected or w_tokens != w:
                problems.append(f"{whole} is not a whole tile beside {tokens} tokens")
            if t != fmt_seconds(w_time) or (verdict == "within") != (w_time <= tpot_s):
                problems.append(f"{whole} is said to take {t}, {verdict} the target; it takes "
                                f"{fmt_seconds(w_time)}")
    for kind, budget, count, shown_tile in WHOLE.findall(text):
        b = number(budget)
        said.add(kind)
        tokens = fused_iteration(d, ctx, p, b).tokens
        expected = tile_for(tokens, tile)
        if tokens % expected or number(count) != tokens // expected or number(shown_tile) != expected:
            problems.append(f"{b}: {tokens} tokens are said to fill {count} tiles of {shown_tile}")
    for kind, budget in named.items():
        chunked = budget is not None and budget > d
        if chunked and kind not in said and not (kind == "Your budget" and budget == largest):
            problems.append(f"{kind} ({budget}) has no tile sentence")
    return problems
