"""The source article's "Worked Example", step by step: formula, the numbers substituted, result,
unit. On screen it is "the source article"; its title is SOURCE_ARTICLE.

This is the source articles' own simplified arithmetic (FLOPs = 2 x params x tokens; an iteration costs
max(tokens x FLOPs per token / peak, weight bytes / bandwidth)), parametrised so any input can be
swapped in. Every input has a range that keeps the arithmetic finite (no underflow to 0, no
overflow to inf). At the defaults it reproduces the article: 5.33 ms, 327.7 ms, 23.04 ms x 16 = 368.6 ms,
14.2x, 128 KiB, 61,440 token-reads = 7.5 GiB, 250 chunks, 1.9 TiB, 0.70 s, 3.69 s (shown in SI
units, as the lab shows every size: 131 kB, 8.05 GB, 2.1 TB). It names two quantities the article
runs together: the prompt's iteration (327.7 ms) and the streams' longest wait, that iteration plus
the decode step that brings their token (333 ms; 14.5x shorter at budget 576).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sim.cost.calibration import calibrated_tile
from sim.cost.iteration import Chunk, Composition, CostModel
from sim.cost.tiles import TiledIteration, tiled
from sim.errors import InputError, check_number
from sim.serving.workloads import TEXTBOOK
from sim.units import fmt_bytes, fmt_count, fmt_flops, fmt_percent, fmt_seconds

# The sources, named and linked wherever the lab cites them (no public address is known for the
# article, so it is cited by its title).
SOURCE_ARTICLE = "Chunked Prefill and Prefill-Decode Interference in LLM Serving"
SARATHI_SERVE = ("Agrawal et al., “Taming Throughput-Latency Tradeoff in LLM Inference with "
                 "Sarathi-Serve”, OSDI 2024")
SARATHI_SERVE_URL = "https://arxiv.org/abs/2403.02310"

# active_params: the parameters one token multiplies through (top-k experts of a mixture of
# experts); None for a dense model, where it is params
DEFAULTS = dict(params=8e9, active_params=None, bytes_per_param=2.0, peak_tflops=400.0, bandwidth_tbps=3.0,
                decodes=TEXTBOOK.decodes, context=TEXTBOOK.context, prompt=TEXTBOOK.prompt,
                budgets=(TEXTBOOK.budget, TEXTBOOK.compared_budget), layers=32, kv_heads=8, head_dim=128,
                kv_bytes=2.0, long_prompt=128_000, burst=TEXTBOOK.burst)

# The continuous inputs' ranges (inclusive). The lower ends keep every time and ratio above zero
# (5e-324 params would underflow the weight read to 0 s and divide by it); with the upper ends and
# counts <= 1e9 the largest time is ~1e16 s and the largest byte count ~1e47: finite.
RANGES = {
    "params": dict(low=1e3, high=1e15, low_inclusive=True),
    "bytes_per_param": dict(low=0.125, high=64, low_inclusive=True),   # 1 bit to 64 bytes
    "peak_tflops": dict(low=1e-3, high=1e6, low_inclusive=True),       # 1 GFLOP/s to 1 EFLOP/s
    "bandwidth_tbps": dict(low=1e-6, high=1e4, low_inclusive=True),    # 1 MB/s to 10 PB/s
    "kv_bytes": dict(low=0.125, high=64, low_inclusive=True),
}

_FORMAT = {"s": fmt_seconds, "B": fmt_bytes, "FLOP": fmt_flops, "tokens": fmt_count,
           "token-reads": fmt_count, "iterations": fmt_count, "chunks": fmt_count,
           "x": lambda v: f"{v:.3g}x", "%": fmt_percent,
           "tokens/s": lambda v: f"{v:,.0f} tokens/s", "FLOP/token": fmt_flops,
           "rows": lambda v: f"{v:,.0f} rows"}


# Steps that need the first budget's chunk (> 0), by key: their titles.
CHUNK_STEPS = {
    "reread_token_reads": "KV re-read by later chunks",
    "reread_bytes": "Re-read bytes",
    "reread_s": "Re-read time",
    "long_prompt_chunks": "Long prompt: chunks",
    "long_prompt_reread_bytes": "Long prompt: re-read bytes",
    "long_prompt_reread_s": "Long prompt: re-read time",
    "burst_prefill_tokens_per_s": "Burst: prefill rate",
    "burst_last_ttft_s": "Burst: last prompt's first token",
}


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    formula: str
    substituted: str
    value: float
    unit: str
    seed_note: str = ""   # where the source article rounds or slips, said plainly

    @property
    def display(self) -> str:
        if self.value is None:
            return "—"
        return _FORMAT.get(self.unit, lambda v: f"{v:.4g} {self.unit}")(self.value)


@dataclass
class WorkedExample:
    inputs: dict
    at_seed: bool = False        # the article's own inputs: only then are its slips pointed out
    steps: list[Step] = field(default_factory=list)
    budgets: list[dict] = field(default_factory=list)
    values: dict = field(default_factory=dict)

    def add(self, key, title, formula, substituted, value, unit, seed_note=""):
        note = seed_note if self.at_seed else ""
        self.steps.append(Step(key, title, formula, substituted, value, unit, note))
        self.values[key] = value
        return value

    def to_json(self) -> dict:
        out = {k: self.values[k] for k in (
            "weight_bytes", "flops_per_token", "decode_weight_read_s", "decode_compute_s",
            "decode_step_s", "unchunked_prefill_s", "wait_unchunked_s")}
        out["budgets"] = self.budgets
        out.update({k: self.values[k] for k in (
            "kv_bytes_per_token", "prompt_kv_bytes", "reread_token_reads", "reread_bytes",
            "reread_s", "long_prompt_chunks", "long_prompt_reread_bytes", "long_prompt_reread_s",
            "burst_prefill_tokens_per_s", "burst_last_ttft_s")})
        return out


def _validated(params, active_params, bytes_per_param, peak_tflops, bandwidth_tbps, decodes, context, prompt, budgets,
               layers, kv_heads, head_dim, kv_bytes, long_prompt, burst) -> dict:
    count = dict(integer=True, high=1e9)
    budgets = tuple(budgets)
    if not budgets:
        raise InputError("give at least one budget")
    return dict(
        params=check_number("params", params, **RANGES["params"]),
        active_params=None if active_params is None else check_number(
            "active params", active_params, **{**RANGES["params"], "high": params}),
        bytes_per_param=check_number("bytes per param", bytes_per_param, **RANGES["bytes_per_param"]),
        peak_tflops=check_number("peak TFLOP/s", peak_tflops, **RANGES["peak_tflops"]),
        bandwidth_tbps=check_number("bandwidth TB/s", bandwidth_tbps, **RANGES["bandwidth_tbps"]),
        decodes=check_number("decodes", decodes, low=0, low_inclusive=True, **count),
        context=check_number("context", context, low=0, low_inclusive=True, **count),
        prompt=check_number("prompt", prompt, **count),
        budgets=tuple(check_number("budget", b, **count) for b in budgets),
        layers=check_number("layers", layers, **count),
        kv_heads=check_number("KV heads", kv_heads, **count),
        head_dim=check_number("head dim", head_dim, **count),
        kv_bytes=check_number("KV bytes", kv_bytes, **RANGES["kv_bytes"]),
        long_prompt=check_number("long prompt", long_prompt, **count),
        burst=check_number("burst", burst, **count))


def worked_example(**overrides) -> WorkedExample:
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise InputError(f"unknown inputs: {', '.join(sorted(unknown))}")
    v = _validated(**{**DEFAULTS, **overrides})
    seed_inputs = _validated(**DEFAULTS)
    # the seed's slips are pointed out at its own inputs only (its first budget is 576; a second
    # budget other than 2,048 only drops that budget's note)
    ex = WorkedExample(inputs=v, at_seed=all(v[k] == seed_inputs[k] for k in v if k != "budgets")
                       and v["budgets"][0] == seed_inputs["budgets"][0])
    peak, bw, d, p = v["peak_tflops"] * 1e12, v["bandwidth_tbps"] * 1e12, v["decodes"], v["prompt"]
    weights = ex.add("weight_bytes", "Weight bytes", "params × bytes per param",
                     f"{fmt_count(v['params'])} × {v['bytes_per_param']:g} B", v["params"] * v["bytes_per_param"], "B")
    active = v["active_params"]
    fpt = ex.add("flops_per_token", "FLOPs per token", "2 × params" if active is None else
                 "2 × active params (a mixture of experts: each token runs through its top-k "
                 "experts only, while every expert's weights are read)",
                 f"2 × {fmt_count(v['params'] if active is None else active)}",
                 2 * (v["params"] if active is None else active), "FLOP/token")
    read = ex.add("decode_weight_read_s", "Decode step: weight read", "weight bytes / bandwidth",
                  f"{fmt_bytes(weights)} / {v['bandwidth_tbps']:g} TB/s", weights / bw, "s")
    compute = ex.add("decode_compute_s", "Decode step: compute", "decodes × FLOPs per token / peak",
                     f"{d:,} × {fmt_flops(fpt)} / {v['peak_tflops']:g} TFLOP/s", d * fpt / peak, "s",
                     "the source article rounds it to 2.6 ms; exactly 2.56 ms")
    ex.add("decode_step_s", "Decode step", "max(weight read, compute)",
           f"max({fmt_seconds(read)}, {fmt_seconds(compute)})", max(read, compute), "s",
           "the source article rounds this up to 'about 6 ms' to allow for KV reads; the lab's "
           "decode step is the weight read alone, and the streams' KV read is its own row below")
    unchunked = ex.add("unchunked_prefill_s", "Whole prompt in one iteration",
                       "max(prompt × FLOPs per token / peak, weight read)",
                       f"max({p:,} × {fmt_flops(fpt)} / {v['peak_tflops']:g} TFLOP/s, {fmt_seconds(read)})",
                       max(p * fpt / peak, read), "s", "the source article rounds it to 'about 330 ms'")
    step = ex.values["decode_step_s"]
    ex.add("wait_unchunked_s", "Streams' wait, unchunked",
           "whole prompt's iteration + the decode step that brings the next token",
           f"{fmt_seconds(unchunked)} + {fmt_seconds(step)}", unchunked + step, "s",
           "the source article calls 330 ms the streams' worst-case gap; their next token comes "
           "with the decode step after the prompt's iteration, so they wait 333 ms")

    def iteration(tokens):
        return max(tokens * fpt / peak, read)

    def iteration_text(tokens):
        return (f"max({tokens:,} × {fmt_flops(fpt)} / {v['peak_tflops']:g} TFLOP/s, "
                f"{fmt_seconds(read)})")

    for i, budget in enumerate(v["budgets"]):
        ex.budgets.append(_budget_steps(ex, i, budget, d, p, iteration, iteration_text, unchunked))

    kv = ex.add("kv_bytes_per_token", "KV bytes per token", "2 (K, V) × layers × KV heads × head dim × bytes",
                f"2 × {v['layers']:,} × {v['kv_heads']:,} × {v['head_dim']:,} × {v['kv_bytes']:g} B",
                2 * v["layers"] * v["kv_heads"] * v["head_dim"] * v["kv_bytes"], "B")
    ex.add("prompt_kv_bytes", "The prompt's KV", "prompt × KV bytes per token",
           f"{p:,} × {fmt_bytes(kv)}", p * kv, "B")
    streams_kv = d * v["context"] * kv
    ex.add("decode_kv_read_s", "KV read per decode step",
           "decodes × context × KV bytes per token / bandwidth",
           f"{d:,} × {v['context']:,} × {fmt_bytes(kv)} / {v['bandwidth_tbps']:g} TB/s",
           streams_kv / bw, "s",
           "the source article allows for it by rounding the 5.3 ms decode step up to 'about "
           f"6 ms'; its own {d:,} streams at {v['context']:,} tokens of context hold "
           f"{fmt_bytes(streams_kv)} of KV, read every step. The simple arithmetic here (and the "
           "simple cost mode) leaves it out of the decode step; the roofline cost mode adds it")
    chunk = v["budgets"][0] - d
    first = f"chunk = first budget − decodes = {v['budgets'][0]:,} − {d:,} = {chunk:,}"
    if chunk <= 0:
        for key, title in CHUNK_STEPS.items():
            ex.add(key, title, "needs a chunk > 0", first + ": starved", None, "")
        return ex
    n = math.ceil(p / chunk)
    reads = ex.add("reread_token_reads", CHUNK_STEPS["reread_token_reads"],
                   "Σ over chunks k of (k − 1) × chunk = chunk × n(n − 1)/2",
                   f"{first}; n = ⌈{p:,} / {chunk:,}⌉ = {n:,}; {chunk:,} × {n:,}·{n - 1:,}/2",
                   chunk * n * (n - 1) / 2, "token-reads")
    rb = ex.add("reread_bytes", CHUNK_STEPS["reread_bytes"], "token-reads × KV bytes per token",
                f"{reads:,.0f} × {fmt_bytes(kv)}", reads * kv, "B")
    ex.add("reread_s", CHUNK_STEPS["reread_s"], "re-read bytes / bandwidth",
           f"{fmt_bytes(rb)} / {v['bandwidth_tbps']:g} TB/s", rb / bw, "s",
           "the source article rounds it to 'roughly 2.5 ms'; its 7.5 GiB (8.05 GB) at 3 TB/s is "
           "2.68 ms")
    n_long = ex.add("long_prompt_chunks", CHUNK_STEPS["long_prompt_chunks"], "⌈long prompt / chunk⌉",
                    f"⌈{v['long_prompt']:,} / {chunk:,}⌉", math.ceil(v["long_prompt"] / chunk), "chunks")
    lb = ex.add("long_prompt_reread_bytes", CHUNK_STEPS["long_prompt_reread_bytes"],
                "chunk × n(n − 1)/2 × KV bytes per token",
                f"{chunk:,} × {n_long:,}·{n_long - 1:,}/2 × {fmt_bytes(kv)}",
                chunk * n_long * (n_long - 1) / 2 * kv, "B")
    ex.add("long_prompt_reread_s", CHUNK_STEPS["long_prompt_reread_s"], "bytes / bandwidth",
           f"{fmt_bytes(lb)} / {v['bandwidth_tbps']:g} TB/s", lb / bw, "s")
    it0 = iteration(d + chunk)
    ex.add("burst_prefill_tokens_per_s", CHUNK_STEPS["burst_prefill_tokens_per_s"], "chunk / iteration time",
           f"{chunk:,} / {fmt_seconds(it0)}", chunk / it0, "tokens/s")
    total = v["burst"] * p
    ex.add("burst_last_ttft_s", CHUNK_STEPS["burst_last_ttft_s"],
           "⌈burst × prompt / chunk⌉ × iteration time",
           f"⌈{v['burst']:,} × {p:,} / {chunk:,}⌉ × {fmt_seconds(it0)}",
           math.ceil(total / chunk) * it0, "s")
    return ex


def _budget_steps(ex: WorkedExample, i: int, budget: int, d: int, p: int, iteration,
                  iteration_text, unchunked: float) -> dict:
    tag = f"budget {budget:,}"
    chunk = ex.add(f"chunk_{i}", f"{tag}: chunk", "budget − decodes", f"{budget:,} − {d:,}",
                   budget - d, "tokens")
    starved = chunk <= 0
    # chunk >= prompt: the budget has room for the whole prompt, so its one iteration holds the
    # decodes and the prompt, not the full budget
    fits = chunk >= p
    seed_2048 = budget == TEXTBOOK.compared_budget
    first = ex.add(f"iteration_{i}", f"{tag}: one iteration" + (" (whole prompt fits)" if fits else ""),
                   "max((decodes + prompt) × FLOPs per token / peak, weight read): chunk ≥ prompt"
                   if fits else "max((decodes + chunk) × FLOPs per token / peak, weight read)",
                   iteration_text(d + min(max(chunk, 0), p)),
                   iteration(d + min(max(chunk, 0), p)), "s",
                   "the source article prices this iteration as 2,112 tokens (2,048 + 64), 'roughly "
                   "85 ms'; the budget already includes the decodes, so it is 2,048 tokens"
                   if seed_2048 else "")
    row = dict(budget=budget, chunk=chunk, starved=starved, iteration_s=first)
    if starved:
        ex.add(f"starved_{i}", f"{tag}: starved",
               "chunk <= 0: the decodes take the whole budget", f"{budget:,} <= {d:,}", None, "",
               "the new prompt gets no tokens until streams finish")
        row.update(iterations=None, ttft_s=None, ttft_increase=None,
                   stall_reduction=unchunked / first, wait_reduction=None,
                   decode_tokens_during_prefill=None)
        return row
    n = math.ceil(p / chunk)
    # every chunk is full but the last (closed form: n can be huge)
    last = iteration(d + p - (n - 1) * chunk)
    ttft = (n - 1) * first + last
    times = (first, last) if n > 1 else (first,)
    ex.add(f"iterations_{i}", f"{tag}: iterations to prefill", "⌈prompt / chunk⌉",
           f"⌈{p:,} / {chunk:,}⌉", n, "iterations")
    ex.add(f"ttft_{i}", f"{tag}: TTFT", "Σ iteration times (the last chunk may be smaller)",
           f"{n - 1:,} × {fmt_seconds(first)} + {fmt_seconds(last)}" if n > 1 else fmt_seconds(first),
           ttft, "s", "the source article says 'around 350 ms', carrying its 2,112-token slip" if seed_2048 else "")
    increase = ex.add(f"ttft_increase_{i}", f"{tag}: TTFT increase", "TTFT / unchunked prefill − 1",
                      f"{fmt_seconds(ttft)} / {fmt_seconds(unchunked)} − 1", ttft / unchunked - 1, "%",
                      "the source article rounds it to 'about 12 percent'; it is 12.5%"
                      if budget == TEXTBOOK.budget else "")
    longest = max(times)
    reduction = ex.add(f"stall_reduction_{i}", f"{tag}: iteration, unchunked / chunked",
                       "whole prompt in one iteration / the one iteration (nothing is split)"
                       if fits else "whole prompt in one iteration / longest chunked iteration",
                       f"{fmt_seconds(unchunked)} / {fmt_seconds(longest)}", unchunked / longest, "x",
                       "the source article's 'a 14-fold reduction in the stall' compares these "
                       "two iterations (327.7 / 23.04 = 14.2); the streams' longest wait, the "
                       "next row, falls 14.5-fold" if budget == TEXTBOOK.budget else "")
    wait = ex.values["wait_unchunked_s"]
    ex.add(f"wait_reduction_{i}", f"{tag}: wait, unchunked / chunked",
           "unchunked wait / longest chunked iteration (it carries their tokens)",
           f"{fmt_seconds(wait)} / {fmt_seconds(longest)}",
           wait / longest, "x")
    wait_ratio = ex.values[f"wait_reduction_{i}"]
    during = ex.add(f"decode_tokens_{i}", f"{tag}: decode tokens during prefill",
                    "decodes × iterations", f"{d:,} × {n:,}", d * n, "tokens")
    row.update(iterations=n, ttft_s=ttft, ttft_increase=increase, stall_reduction=reduction,
               wait_reduction=wait_ratio, decode_tokens_during_prefill=during)
    return row


# --- the last chunk, priced as the lab's runs price it -------------------------------------------
@dataclass(frozen=True)
class LastChunk:
    """The prompt's last chunk (what the full chunks leave) and its iteration, priced by a cost
    model in its own mode, beside the full chunk before it: the tokens, the rows its GEMMs
    compute (whole tiles in the calibrated mode), and what the empty ones cost."""

    mode: str
    gpu: str
    decodes: int
    chunk: int                      # a full chunk: budget − decodes
    chunks: int                     # ⌈prompt / chunk⌉
    last: int                       # the last chunk's tokens
    final: TiledIteration           # the last chunk's iteration
    full: TiledIteration | None     # the full chunk before it (None: the prompt is one chunk)
    calibrated_tile: int            # the tile the calibrated mode would use on this GPU
    steps: list[Step]


def last_chunk(cost: CostModel, decodes: int, context: int, prompt: int,
               budget: int) -> LastChunk | None:
    """The last chunk of `prompt` at `budget` beside `decodes` streams of `context` tokens each,
    its iteration and the full one before it priced by `cost` (each chunk attends to the prompt
    before it), as rows of formulas; None where the decodes leave no chunk."""
    d = check_number("decodes", decodes, low=0, low_inclusive=True, high=1e9, integer=True)
    ctx = check_number("context", context, low=0, low_inclusive=True, high=1e9, integer=True)
    p = check_number("prompt", prompt, high=1e9, integer=True)
    chunk = min(check_number("budget", budget, high=1e9, integer=True) - d, p)
    if chunk <= 0:
        return None
    n = math.ceil(p / chunk)
    last = p - (n - 1) * chunk

    def iteration(length: int, prefix: int) -> TiledIteration:
        return tiled(cost, Composition((ctx,) * d, (Chunk(length, prefix, last=prefix + length == p),)))

    final = iteration(last, (n - 1) * chunk)
    full = iteration(chunk, (n - 2) * chunk) if n > 1 else None
    mode = cost.mode
    tile = final.tile_here
    t, rows = final.tokens, final.rows
    steps = [
        Step("last_chunk_tokens", "Last chunk: tokens", "prompt − (n − 1) × chunk, n = ⌈prompt / chunk⌉",
             f"{p:,} − {n - 1:,} × {chunk:,}", last, "tokens"),
        Step("last_iteration_tokens", "Last chunk: its iteration's tokens", "decodes + last chunk",
             f"{d:,} + {last:,}", t, "tokens"),
        Step("last_rows", "Last chunk: rows its matrix products compute",
             "⌈tokens / tile⌉ × tile" if tile else f"tokens (the {mode} mode has no tiles)",
             f"⌈{t:,} / {tile}⌉ × {tile}" if tile else f"{t:,}", rows, "rows"),
        Step("last_empty_rows", "Last chunk: empty rows", "rows − tokens", f"{rows:,} − {t:,}",
             final.wasted_rows, "rows"),
        Step("last_iteration_s", "Last chunk: its iteration",
             f"the {mode} mode on the {cost.gpu.name}: the decodes at their context and the "
             "chunk after the prompt before it",
             f"{d:,} decodes at {ctx:,} tokens + {last:,} tokens after {(n - 1) * chunk:,}",
             final.time_s, "s"),
        Step("last_empty_s", "Last chunk: the empty rows' time",
             "its iteration − the same iteration on exactly its tokens",
             f"{fmt_seconds(final.time_s)} − {fmt_seconds(final.exact_time_s)}", final.wasted_s, "s"),
    ]
    if full is not None:
        steps.append(Step("full_iteration_s", "The full chunk before it: its iteration",
                          f"the {mode} mode: the decodes and a full chunk after the prompt before it",
                          f"{d:,} decodes at {ctx:,} tokens + {chunk:,} tokens after "
                          f"{(n - 2) * chunk:,}", full.time_s, "s"))
    return LastChunk(cost.mode, cost.gpu.name, d, chunk, n, last, final, full,
                     calibrated_tile(cost.gpu), steps)
