"""The Prefix caching page's figure: one run with prefix caching on. Above, each request's prompt
as a bar, the tokens it computed in prefill orange and those it read from the cache in the same
orange, faint (prompt tokens the engine did not compute); below, the KV pool over time: what
running requests hold, and what cached blocks nobody reads hold (free, and evicted least recently
used first when a block is needed).

Pure: data in, Altair out.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from sim.serving.kv import hit_tokens
from sim.serving.trace import Trace

from .figure import Figure
from .theme import Look

COMPUTED = "computed (prefilled)"
CACHED = "read from the cache"
HELD = "held by running requests"
IDLE = "cached, nobody reads it"
KV_POINTS = 600       # the KV pool's iterations drawn at most (a chart is about as many pixels wide)
CACHED_ALPHA = "59"   # the cache's faint orange: prefill's colour at 35% (hex alpha)


def cached_ink(look: Look) -> str:
    """Prompt tokens not computed: prefill's orange, faint."""
    return look.prefill + CACHED_ALPHA


def request_frame(trace: Trace, shared: np.ndarray, block: int) -> pd.DataFrame:
    """A row per (new request, part): its prompt tokens computed (every chunk, a recomputation
    after a preemption included) and read from the cache (over its admissions), each with its
    arithmetic (`shared`: each request's tokens shared with its group; `block`: the engine's)."""
    new = np.flatnonzero(~trace.prefilled)
    computed = np.bincount(trace.chunk_request, weights=trace.chunk_length,
                           minlength=len(trace.prompt)).astype(np.int64)
    cached = trace.cached_tokens if trace.cached_tokens is not None else \
        np.zeros(len(trace.prompt), np.int64)
    prompt = trace.prompt
    hits = [f"hit ≤ ⌊min(shared {int(shared[r]):,}, prompt − 1 = {int(prompt[r]) - 1:,}) / "
            f"{block}⌋ × {block} = {hit_tokens(int(shared[r]), int(prompt[r]), block):,}"
            f"; found {int(cached[r]):,}" for r in new]
    computes = [f"computed = prompt − hit = {int(prompt[r]):,} − {int(cached[r]):,}"
                + _rest(int(computed[r]), int(prompt[r] - cached[r])) for r in new]
    rows = {"request": np.r_[new, new], "part": [COMPUTED] * len(new) + [CACHED] * len(new),
            "tokens": np.r_[computed[new], cached[new]],
            "prompt_tokens": np.r_[prompt[new], prompt[new]],
            "arrival_s": np.r_[trace.arrival_s[new], trace.arrival_s[new]],
            "formula": computes + hits}
    return pd.DataFrame(rows)


def _rest(computed: int, uncached: int) -> str:
    """The end of a request's computed tokens' arithmetic: its uncached rest, more where a
    preemption made it recompute, less where the run ended first."""
    if computed == uncached:
        return f" = {computed:,}"
    if computed > uncached:
        return f" = {uncached:,}, + {computed - uncached:,} recomputed after a preemption"
    return f" = {uncached:,}, {computed:,} of it computed when the run ended"


def kv_frame(trace: Trace, points: int = KV_POINTS) -> pd.DataFrame:
    """A row per (iteration, holder): KV tokens at its end, held by running requests and by
    cached blocks nobody reads. Thinned for display to at most `points` iterations: of each run
    of consecutive iterations, the one whose KV held in all is largest (so no peak is lost)."""
    cached = trace.kv_cached_tokens if trace.kv_cached_tokens is not None else \
        np.zeros(trace.iterations, np.int64)
    kept = np.arange(trace.iterations)
    if trace.iterations > points:
        total = trace.kv_used_tokens + cached
        bucket = kept * points // trace.iterations
        order = np.lexsort((-total, bucket))           # each bucket's largest first
        kept = np.sort(order[np.r_[True, bucket[order][1:] != bucket[order][:-1]]])
    n = len(kept)
    return pd.DataFrame({"end_s": np.r_[trace.end_s[kept], trace.end_s[kept]],
                         "holder": [HELD] * n + [IDLE] * n,
                         "tokens": np.r_[trace.kv_used_tokens[kept], cached[kept]],
                         "capacity_tokens": trace.kv_capacity_tokens})


def prefix_figure(requests: pd.DataFrame, kv: pd.DataFrame, capacity: int, look: Look, *,
                  width: int = 900) -> Figure:
    """The per-request bars over the KV pool's line, each with its arithmetic on hover."""
    legend = alt.Legend(orient="top", direction="horizontal", labelLimit=0, title=None)
    parts = alt.Color("part:N", sort=[COMPUTED, CACHED], legend=legend,
                      scale=alt.Scale(domain=[COMPUTED, CACHED], range=[look.prefill, cached_ink(look)]))
    bars = (alt.Chart(alt.Data(name="requests"))
            .transform_calculate(order=f"datum.part == '{COMPUTED}' ? 0 : 1")
            .mark_bar()
            .encode(x=alt.X("request:O", title="request (in arrival order)",
                            axis=alt.Axis(labels=False, ticks=False)),
                    y=alt.Y("tokens:Q", title="prompt tokens", stack="zero"),
                    color=parts, order=alt.Order("order:Q"),
                    tooltip=[alt.Tooltip("request:Q"), alt.Tooltip("part:N", title="tokens"),
                             alt.Tooltip("tokens:Q", title="tokens", format=","),
                             alt.Tooltip("formula:N", title="worked"),
                             alt.Tooltip("prompt_tokens:Q", title="its prompt (tokens)", format=","),
                             alt.Tooltip("arrival_s:Q", title="arrival (s)", format=",.4f")])
            .properties(width=width, height=150 if look.presenter else 170,
                        title=alt.TitleParams("Each request's prompt", subtitle=(
                            "computed + read from the cache = its prompt (more computed: "
                            "recomputed after a preemption)"))))
    holders = alt.Color("holder:N", legend=legend, sort=[HELD, IDLE],
                        scale=alt.Scale(domain=[HELD, IDLE], range=[look.muted, cached_ink(look)]))
    pool = (alt.Chart(alt.Data(name="kv"))
            .mark_area(interpolate="step-before")
            .encode(x=alt.X("end_s:Q", title="time (s)", axis=alt.Axis(format=",.3~f")),
                    y=alt.Y("tokens:Q", stack="zero", title="KV tokens",
                            scale=alt.Scale(domain=[0, max(capacity, 1)], nice=False)),
                    color=holders, order=alt.Order("holder:N", sort="descending"),
                    tooltip=[alt.Tooltip("end_s:Q", title="iteration's end (s)", format=",.4f"),
                             alt.Tooltip("holder:N", title="KV"),
                             alt.Tooltip("tokens:Q", title="tokens", format=","),
                             alt.Tooltip("capacity_tokens:Q", title="of the pool's (tokens)",
                                         format=",")])
            .properties(width=width, height=110 if look.presenter else 130,
                        title=alt.TitleParams("The KV pool", subtitle=(
                            f"{capacity:,} tokens; cached blocks nobody reads count as free"))))
    chart = alt.vconcat(bars, pool, spacing=16).resolve_scale(color="independent")
    return Figure(chart, look, {"requests": requests, "kv": kv})
