"""The Prefix caching page's numbers and words (no Streamlit): what one workload's two runs, with
prefix caching off and on, measured (`Outcome`), which regime that is (nothing to share, no hits,
hits, hits cut short by eviction under KV pressure, or by arrivals before the prefix was cached),
and the sentences that say so with the current numbers, each number's formula beside it. The
closing sentence (`verdict`) names the cause the runs show: a shared prefix shorter than a block
(nothing to hit, however much is cached), fewer chunks only where a prompt needs fewer alone at
the budget and the run's count fell, and otherwise how little the hits spare, with the first
token's gain put on the mean wait or the mean prefill, whichever fell more.

A hit is what the engine reads instead of computing: ⌊min(shared prefix, prompt − 1) / block⌋ ×
block tokens (vLLM V1's 16-token blocks, SGLang's 1-token pages; sim/serving/kv.py
`PrefixCache`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.serving.kv import hit_tokens
from sim.serving.metrics import request_times, summarize
from sim.serving.trace import Trace
from sim.serving.workloads import Workload, make_workload, poisson
from sim.units import fmt_change, fmt_seconds, shown_same

NOTHING, NO_HITS, HITS, EVICTED, EARLY = "nothing", "no hits", "hits", "evicted", "early"


def shared_workload(arrivals: str, requests: int, qps: float, seed: int, prompt: int,
                    output: int, prefix: int, share: float) -> Workload:
    """The page's requests: Poisson arrivals, or the same rows all at time 0 (`arrivals` "burst")."""
    drawn = poisson(requests, qps, seed=seed, prompt=prompt, output=output, prefix_tokens=prefix,
                    prefix_share=share)
    if arrivals == "poisson":
        return drawn
    return make_workload(np.zeros(len(drawn)), drawn.prompt, drawn.output,
                         prefix_group=drawn.prefix_group, prefix_tokens=drawn.prefix_tokens)


def hit_formula(shared: int, prompt: int, block: int) -> str:
    """The hit's arithmetic, written out."""
    return (f"hit = ⌊min(shared prefix, prompt − 1) / block⌋ × block = ⌊min({shared:,}, "
            f"{prompt - 1:,}) / {block}⌋ × {block} = {hit_tokens(shared, prompt, block):,} tokens")


@dataclass(frozen=True)
class Outcome:
    """One run's prefill and first-token figures (tokens; seconds)."""
    prompt_tokens: int      # every prompt's tokens, admissions again after a preemption excluded
    computed: int           # prompt tokens the engine computed (the sum of its chunks)
    hits: int               # prompt tokens found in the cache, over every admission
    looked_up: int          # prompt tokens looked up, every admission's
    ttft_p50: float
    ttft_p99: float
    preemptions: int
    full: bool              # at some iteration's end less than a block of KV was free
    cached_peak: int        # the most KV cached blocks nobody reads held at an iteration's end
    chunks: int             # prefill chunks the engine ran
    wait_mean: float        # a new request's mean arrival -> start of its first chunk's iteration
    prefill_mean: float     # a new request's mean first chunk's start -> its first token

    @property
    def hit_rate(self) -> float:
        return self.hits / self.looked_up if self.looked_up else 0.0


def outcome(trace: Trace, block: int) -> Outcome:
    """`trace`'s figures (`block`: its engine's KV block, for when the pool was full)."""
    ttft = summarize(trace).ttft_s
    times = request_times(trace)
    waits, prefills = (x[~np.isnan(x)] for x in (times.queue_s, times.prefill_s))
    cached = trace.kv_cached_tokens if trace.kv_cached_tokens is not None else \
        np.zeros_like(trace.kv_used_tokens)
    held = trace.kv_used_tokens + cached
    return Outcome(int(trace.prompt[~trace.prefilled].sum()), int(trace.prefill_tokens.sum()),
                   trace.prefix_hit_tokens,
                   int(trace.looked_up_tokens.sum()) if trace.looked_up_tokens is not None else 0,
                   ttft.p50, ttft.p99, int(trace.preemptions.sum()),
                   bool(len(held) and (trace.kv_capacity_tokens - held).min() < block),
                   int(cached.max()) if len(cached) else 0, len(trace.chunk_length),
                   float(waits.mean()) if len(waits) else float("nan"),
                   float(prefills.mean()) if len(prefills) else float("nan"))


def sharing(workload: Workload) -> int:
    """Requests whose prompts begin with a shared prefix (a group's tokens; a request of no group
    or a group of its own shares none)."""
    return 0 if workload.prefix_tokens is None else int((workload.prefix_tokens > 0).sum())


def ideal_hits(workload: Workload, block: int) -> int:
    """The hits if every request that shares found its group's prefix cached: each but the first
    of its group, `hit_tokens` of its shared tokens."""
    if workload.prefix_group is None:
        return 0
    total = 0
    for group in np.unique(workload.prefix_group[workload.prefix_group >= 0]):
        mine = np.flatnonzero(workload.prefix_group == group)[1:]
        total += sum(hit_tokens(int(workload.prefix_tokens[r]), int(workload.prompt[r]), block)
                     for r in mine)
    return total


def shared_prompt(workload: Workload) -> tuple[int, int]:
    """The longest shared prefix any request begins with and that request's prompt (tokens;
    (0, 0) where none shares)."""
    if workload.prefix_tokens is None or not workload.prefix_tokens.any():
        return 0, 0
    r = int(np.argmax(workload.prefix_tokens))
    return int(workload.prefix_tokens[r]), int(workload.prompt[r])


def chunk_formula(prompt: int, hit: int, budget: int) -> tuple[int, int, str]:
    """The chunks one prompt takes alone at the token budget without and with its hit, and the
    arithmetic: ⌈prompt / budget⌉ and ⌈(prompt − hit) / budget⌉."""
    whole, rest = -(-prompt // budget), -(-(prompt - hit) // budget)
    return whole, rest, (f"⌈{prompt:,} / {budget:,}⌉ = {whole:,}, ⌈({prompt:,} − {hit:,}) / "
                         f"{budget:,}⌉ = {rest:,}")


def regime(on: Outcome, ideal: int) -> str:
    """What the cache did: nothing to share (no two requests share a block), no hits, every
    possible hit, or fewer because the pool filled (eviction) or requests came before the prefix
    was cached."""
    if not ideal:
        return NOTHING
    if not on.hits:
        return NO_HITS
    if on.hits >= ideal:
        return HITS
    return EVICTED if on.full else EARLY


@dataclass(frozen=True)
class Said:
    """The page's sentences, and the numbers each states (for the claims test)."""
    regime: str
    sentences: tuple[str, ...]
    saved: int
    hit_rate: float


def pct(x: float) -> str:
    return f"{x:.1%}"


def claims(off: Outcome, on: Outcome, ideal: int, sharing: int, requests: int) -> Said:
    """What caching changed, by regime, with every number's arithmetic in the sentence."""
    kind = regime(on, ideal)
    saved = off.computed - on.computed
    said = []
    if kind == NOTHING:
        begins = ("none begins with a shared prefix" if not sharing else
                  f"the shared prefix begins {sharing:,} of them")
        said.append(f"No two of these {requests:,} requests share a whole block of prompt "
                    f"({begins}): the cache finds nothing, and both runs compute the same prompt "
                    "tokens")
    elif kind == NO_HITS:
        said.append(f"{sharing:,} of {requests:,} requests begin with the shared prefix, yet none "
                    "found it cached: each was admitted before any of the others had computed "
                    "and cached it")
    else:
        said.append(f"With the cache, the engine computed {on.computed:,} prompt tokens instead "
                    f"of {off.computed:,}: {saved:,} saved ({off.computed:,} − {on.computed:,}), "
                    f"read from the cache instead (hit rate {pct(on.hit_rate)} = {on.hits:,} hit "
                    f"tokens / {on.looked_up:,} looked up)")
        if kind == HITS:
            said.append(f"Each of the {sharing - 1:,} requests that share, after the first, found "
                        f"all of the prefix it could: {ideal:,} tokens in all, {on.hits:,} found"
                        + (" (a request readmitted after a preemption looks up again)"
                           if on.hits > ideal else ""))
        elif kind == EVICTED:
            said.append(f"It found {on.hits:,} of the {ideal:,} tokens it could have. The KV pool "
                        "filled (less than a block free at an iteration's end), and then cached "
                        "blocks nobody reads are evicted, least recently used first: a later "
                        "request misses what was evicted (and one admitted before the prefix was "
                        "cached misses it too)")
        else:
            said.append(f"It found {on.hits:,} of the {ideal:,} tokens it could have: some "
                        "requests were admitted before the prefix was computed and cached")
    said.append("The median time to first token "
                + fmt_change(off.ttft_p50, on.ttft_p50, ratio=False, shown=fmt_seconds)
                + ", the p99 " + fmt_change(off.ttft_p99, on.ttft_p99, ratio=False,
                                            shown=fmt_seconds))
    return Said(kind, tuple(said), saved, on.hit_rate)


def verdict(off: Outcome, on: Outcome, kind: str, sharing: int, shared: int, prompt: int,
            block: int, budget: int) -> str:
    """Whether caching bought first tokens here, and the cause the runs show (`shared`, `prompt`:
    the longest shared prefix and its request's prompt; `block`: the engine's KV block; `budget`:
    the run's token budget)."""
    if kind == NOTHING:
        if sharing < 2:
            return ("Here caching saves nothing: " + ("no prompt begins with a shared prefix"
                    if not sharing else "only one request begins with the shared prefix")
                    + ", so no request reads blocks another computed.")
        if shared < block:
            unread = (f", though up to {on.cached_peak:,} tokens of the requests' own blocks sat "
                      "cached, unread" if on.cached_peak else "")
            return (f"Here caching saves nothing: the shared prefix, {shared:,} tokens, is shorter "
                    f"than one {block}-token block, and only full blocks are cached and found, "
                    f"so no prompt finds a hit{unread}.")
        return "Here caching saves nothing: no two requests share a whole block of prompt."
    if kind == NO_HITS:
        return ("Here caching saves nothing: every request that shares the prefix was admitted "
                "before another had computed a block of it, so nothing was cached to read yet.")
    sooner = on.ttft_p50 < off.ttft_p50 and not shown_same(on.ttft_p50, off.ttft_p50)
    whole, rest, formula = chunk_formula(prompt, hit_tokens(shared, prompt, block), budget)
    run = (f"in the run, where decodes share the budget, {off.chunks:,} prefill chunks without "
           f"the cache, {on.chunks:,} with")
    if rest < whole and on.chunks < off.chunks:
        if sooner:
            return ("Caching cuts the time to first token: a request that finds the prefix "
                    f"prefills only the rest of its prompt, in fewer chunks at the "
                    f"{budget:,}-token budget: alone, {formula} ({run}).")
        return (f"The prefill saved (alone, {formula} chunks at the {budget:,}-token budget; "
                f"{run}) does not show in the median first token here: the server was not "
                "waiting on prefill work.")
    saved = off.computed - on.computed
    said = ((f"The hits leave a prompt's chunk count unchanged at the {budget:,}-token budget: "
             f"alone, {formula} ({run})") if rest == whole else
            (f"The hits lower a prompt's chunk count alone at the {budget:,}-token budget, "
             f"{formula}, yet not the run's ({run})")) + (
        f". They spare {saved:,} of {off.computed:,} prompt tokens "
        f"({pct(saved / off.computed if off.computed else 0.0)}). ")
    if not sooner:
        return said + ("The median first token " + fmt_change(off.ttft_p50, on.ttft_p50,
                                                               ratio=False) + ".")
    waited, prefilled = off.wait_mean - on.wait_mean, off.prefill_mean - on.prefill_mean
    lead = ("The median first token " + fmt_change(off.ttft_p50, on.ttft_p50, ratio=False)
            + ", though neither part of the mean falls: "
            if max(waited, prefilled) <= 0 else "The first token comes sooner mostly from "
            + ("shorter queues" if waited > prefilled else "shorter prefills") + ": ")
    return said + (lead + "a request's mean wait from its arrival to its first chunk "
                   + fmt_change(off.wait_mean, on.wait_mean, ratio=False)
                   + ", its mean prefill, first chunk to first token, "
                   + fmt_change(off.prefill_mean, on.prefill_mean, ratio=False) + ".")


def table_rows(off: Outcome, on: Outcome) -> dict[str, tuple[str, str]]:
    """The comparison table: each figure in both runs."""
    return {"prompt tokens computed": (f"{off.computed:,}", f"{on.computed:,}"),
            "prompt tokens read from the cache": (f"{off.hits:,}", f"{on.hits:,}"),
            "hit rate (hits / looked up)": (pct(off.hit_rate), pct(on.hit_rate)),
            "TTFT p50": (fmt_seconds(off.ttft_p50), fmt_seconds(on.ttft_p50)),
            "TTFT p99": (fmt_seconds(off.ttft_p99), fmt_seconds(on.ttft_p99)),
            "preemptions": (f"{off.preemptions:,}", f"{on.preemptions:,}"),
            "most KV in cached blocks nobody reads": (f"{off.cached_peak:,} tokens",
                                                      f"{on.cached_peak:,} tokens")}
