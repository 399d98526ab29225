"""The words on GEMM tiles, checked against the cost model's prices (called by test_claims's
scenarios). The Roofline page's: the rows each named budget computes are its iteration's tokens
rounded up to whole tiles (worked out here, not by the code under test), the empty rows are the
rest, their time is the iteration's less the same one with its token GEMMs on exactly its tokens,
and the whole tiles beside a ragged budget are priced and judged against the target as said. The
Worked example's last chunk: its tokens, its iteration's tokens, rows and time, and the full chunk
before it, each from the scenario's prompt, budget and decodes priced here."""

from __future__ import annotations

import math
import re

from sim.cost.iteration import Chunk, Composition
from sim.studies.budget import fused_iteration, largest_budget_within
from sim.studies.worked_example import last_chunk
from sim.units import fmt_percent, fmt_seconds
from ui.learn.roofline_words import tiles_words
from ui.learn.worked import last_chunk_step

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
        return [] if f"The {cost.mode} mode has no tiles" in text else \
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


LAST = re.compile(rf"(?:After ([\d,]+) full chunks? of ([\d,]+) tokens, the last holds the ([\d,]+) "
                  rf"tokens left|The whole ([\d,]+)-token prompt is one chunk|([\d,]+) × ([\d,]+) is "
                  rf"the whole prompt, so the last chunk is as full as the others): its iteration "
                  rf"carries (?:its )?([\d,]+) tokens .*? and takes {TIME} in the (\w+) mode on the "
                  rf"(.*?)(?:, against {TIME} for the full chunk before it)?\.")
LAST_RAGGED = re.compile(rf"whole tiles of (\d+) rows: ⌈([\d,]+) / (\d+)⌉ × (\d+) = ([\d,]+) rows, "
                         rf"([\d,]+) of them empty, which take {TIME} \(([\d.,]+%) of the iteration\)")
LAST_WHOLE = re.compile(r"whole tiles of (\d+) rows, and its ([\d,]+) tokens fill ([\d,]+) tiles? "
                        r"exactly: no row is empty")


def check_last_chunk(s) -> list[str]:
    """The Worked example's last chunk against the scenario: chunk = budget − decodes (at most
    the prompt), n = ⌈prompt / chunk⌉, the last chunk what the n − 1 full ones leave; its iteration
    and the full one before it priced with every decode at its context."""
    cost = s.cost_model()
    d, ctx, p = s.decodes, s.context, s.prompt
    chunk = min(s.budget - d, p)
    lc = last_chunk(cost, d, ctx, p, s.budget)
    if chunk <= 0:
        return [] if lc is None else [f"a last chunk is told with no room for a chunk ({s.budget})"]
    text = plain(last_chunk_step(lc).sentence)
    n = math.ceil(p / chunk)
    left = p - (n - 1) * chunk

    def priced(length: int, prefix: int):
        comp = Composition((ctx,) * d, (Chunk(length, prefix, last=prefix + length == p),))
        return cost.price(comp).time_s, cost.time(*cost.aggregates(comp), token_tiles=False)[2]

    time_s, exact_s = priced(left, (n - 1) * chunk)
    tokens = d + left
    said = LAST.search(text)
    if not said:
        return [f"the last chunk's sentence is not one the check reads: {text!r}"]
    full_n, full_c, last_t, whole_p, times_n, times_c, carried, t, mode, _gpu, full_t = said.groups()
    problems = []
    if full_n and (number(full_n), number(full_c), number(last_t)) != (n - 1, chunk, left):
        problems.append(f"{full_n} full chunks of {full_c} and {last_t} left; the prompt makes "
                        f"{n - 1} of {chunk} and {left} left")
    if full_n and left == chunk or times_n and left != chunk or whole_p and n != 1:
        problems.append(f"the last chunk is told as the wrong case ({n} chunks, {left} left)")
    if times_n and (number(times_n), number(times_c)) != (n, chunk):
        problems.append(f"{times_n} × {times_c} is not {n} × {chunk}")
    if number(carried) != tokens or t != fmt_seconds(time_s) or mode != cost.mode:
        problems.append(f"the last iteration: {carried} tokens, {t} in the {mode} mode; it is "
                        f"{tokens} tokens, {fmt_seconds(time_s)} in the {cost.mode} mode")
    if full_t and full_t != fmt_seconds(priced(chunk, (n - 2) * chunk)[0]):
        problems.append(f"the full chunk before it is said to take {full_t}")
    tile = cost.gemm_tile
    if tile is None:
        if f"The {cost.mode} mode has no tiles" not in text:
            problems.append("the last chunk's words give tiles to a mode without them")
        return problems
    used = tile_for(tokens, tile)
    rows = math.ceil(tokens / used) * used
    ragged, whole = LAST_RAGGED.search(text), LAST_WHOLE.search(text)
    if rows > tokens:
        if not ragged:
            return problems + [f"{tokens} tokens leave {rows - tokens} rows empty, unsaid"]
        shown_tile, t1, t2, t3, r, w, w_time, share = ragged.groups()
        if ((number(shown_tile), number(t1), number(t2), number(t3), number(r), number(w))
                != (used, tokens, used, used, rows, rows - tokens)
                or w_time != fmt_seconds(time_s - exact_s)
                or share != fmt_percent((time_s - exact_s) / time_s)):
            problems.append(f"the last chunk's rows: {ragged.group(0)!r}; {tokens} tokens on tiles of "
                            f"{used} compute {rows}, the empty ones {fmt_seconds(time_s - exact_s)}")
    elif not whole or (number(whole.group(1)), number(whole.group(2)),
                       number(whole.group(3))) != (used, tokens, rows // used):
        problems.append(f"{tokens} tokens fill {rows // used} tiles of {used}; the words: {text!r}")
    return problems
