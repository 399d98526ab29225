"""The worked example as a story: the core chain (weights, decode step, whole-prompt prefill,
chunk, iterations, time to first token, stall reduction), each step a sentence, its rows of
sim.studies.worked_example and a picture to scale; then the side topics in labelled sections, and
the prompt's last chunk priced in the sidebar's cost mode (its GEMM tiles and their empty rows).
Pure Python (no Streamlit): the page draws what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from sim.cost.calibration import padded_rows
from sim.studies.worked_example import LastChunk, Step, WorkedExample
from sim.units import fmt_bytes, fmt_counted, fmt_percent, fmt_seconds

from ..shell.glossary import first


@dataclass(frozen=True)
class StoryStep:
    id: str
    title: str
    sentence: str               # Markdown, numbers from the example
    steps: list[Step]           # the example's rows this step explains
    picture: pd.DataFrame       # charts.worked.to_scale pieces (empty: no picture)
    unit: str = "ms"            # the picture's axis


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    intro: str
    steps: list[Step]


def _pieces(*rows: tuple[str, list[tuple[str, float]], str]) -> pd.DataFrame:
    """Rows of touching pieces: (row, [(part, length), ...], total text)."""
    out = []
    for row, parts, total in rows:
        start = 0.0
        for part, length in parts:
            out.append(dict(row=row, start=start, end=start + length, part=part, total=total))
            start += length
    return pd.DataFrame(out, columns=["row", "start", "end", "part", "total"])


def _chunks(n: int, size: float, last: float, part: str) -> list[tuple[str, float]]:
    """n pieces of `size`, the last one `last` (drawn one by one up to 64, else as one piece)."""
    if n > 64:
        return [(part, (n - 1) * size + last)]
    return [(part, size)] * (n - 1) + [(part, last)]


def _times(before: float, after: float) -> str:
    """How many times shorter (or longer) a wait became, e.g. "**14.5× shorter**"."""
    if fmt_seconds(before) == fmt_seconds(after):
        return "**no shorter**"
    if after < before:
        return f"**{before / after:,.3g}× shorter**"
    return f"**{after / before:,.3g}× longer**"


def core_chain(ex: WorkedExample, gpu_memory_bytes: float) -> list[StoryStep]:
    """The seven steps from the weights to the stall reduction, for the first budget."""
    v, by_key = ex.values, {s.key: s for s in ex.steps}
    inputs = ex.inputs
    d, p = inputs["decodes"], inputs["prompt"]
    ms = 1e3

    def rows(*keys: str) -> list[Step]:
        return [by_key[k] for k in keys if k in by_key]

    read, compute, step = v["decode_weight_read_s"], v["decode_compute_s"], v["decode_step_s"]
    prefill = v["unchunked_prefill_s"]
    prompt_compute = p * v["flops_per_token"] / (inputs["peak_tflops"] * 1e12)
    out = [
        StoryStep("weights", "1. The weights, read once per iteration",
                  f"Every iteration reads all the weights once: **{by_key['weight_bytes'].display}**. "
                  f"Each token costs **{by_key['flops_per_token'].display}** of arithmetic: a "
                  "multiply and an add per parameter.",
                  rows("weight_bytes", "flops_per_token"),
                  _pieces(("GPU memory", [("weights", v["weight_bytes"] / 1e9),
                                          ("free", max(0.0, gpu_memory_bytes - v["weight_bytes"]) / 1e9)],
                           fmt_bytes(gpu_memory_bytes))), "GB"),
        StoryStep("decode", f"2. A decode step is {'memory' if read >= compute else 'compute'}-bound",
                  f"A decode step makes one token for each of the {d:,} streams. Reading the "
                  f"weights takes **{fmt_seconds(read)}**, the arithmetic "
                  f"**{fmt_seconds(compute)}**; the step takes the larger, "
                  f"**{fmt_seconds(step)}**. "
                  + ("While the weight read is the larger, more tokens in the same step cost "
                     "nothing extra." if read >= compute else
                     "So many streams make the arithmetic the larger: each one more adds to the "
                     "step."),
                  rows("decode_weight_read_s", "decode_compute_s", "decode_step_s"),
                  _pieces(("weight read", [("weight read (memory)", read * ms)], fmt_seconds(read)),
                          ("arithmetic", [("arithmetic (compute)", compute * ms)],
                           fmt_seconds(compute)))),
        StoryStep("prefill", "3. The whole prompt in one pass is "
                  f"{'compute' if prompt_compute > read else 'memory'}-bound",
                  f"The whole {p:,}-token prompt in one iteration: **{fmt_seconds(prefill)}**, "
                  f"{prefill / step:,.3g}× a decode step. "
                  + ("Its arithmetic is the larger time" if prompt_compute > read else
                     "So short a prompt's arithmetic is less than the weight read, so it costs "
                     "what a decode step costs")
                  + ", and every stream waits for all of it.",
                  rows("unchunked_prefill_s"),
                  _pieces(("decode step", [("decode", step * ms)], fmt_seconds(step)),
                          ("whole prompt", [("prefill", prefill * ms)], fmt_seconds(prefill)))),
    ]
    chunk = v.get("chunk_0")
    budget = inputs["budgets"][0]
    if chunk is None or chunk <= 0:
        return out + [StoryStep(
            "starved", "4. No room for a chunk",
            f"Budget {budget:,} ≤ {d:,} streams: their decode tokens take the whole budget, so the "
            "prompt gets no tokens until streams finish. Raise the first budget above the number "
            "of streams.",
            rows("chunk_0", "iteration_0", "starved_0"), _pieces())]
    n, iteration, ttft = v["iterations_0"], v["iteration_0"], v["ttft_0"]
    last = ttft - (n - 1) * iteration
    longest, wait = max(iteration, last), v["wait_unchunked_s"]
    out += [
        StoryStep("chunk", "4. Split it: a chunk fills the budget" if chunk < p else
                  "4. The budget holds the whole prompt",
                  f"Budget B = {budget:,} tokens per iteration: the {d:,} streams' decode tokens "
                  f"first, then a chunk of C = B − D = **{chunk:,} prompt tokens**."
                  + ("" if chunk < p else f" That is at least the whole {p:,}-token prompt, so "
                     "nothing is split: one iteration carries the decodes and all of it."),
                  rows("chunk_0"),
                  _pieces(("one iteration", [("decode", d), ("prefill", chunk)], f"{budget:,} tokens")),
                  "tokens"),
        StoryStep("iterations", "5. The prompt takes a few iterations" if n > 1 else
                  "5. The prompt takes one iteration",
                  f"An iteration with a full chunk costs **{fmt_seconds(iteration)}**, and the "
                  f"prompt needs ⌈{p:,} / {chunk:,}⌉ = **{n:,}** of them"
                  + (f"; the last, with the {p - (n - 1) * chunk:,} tokens left, "
                     f"**{fmt_seconds(last)}**." if fmt_seconds(last) != fmt_seconds(iteration) else ".")
                  if n > 1 else
                  f"The one iteration, the decodes and the {p:,}-token prompt, costs "
                  f"**{fmt_seconds(last)}**.",
                  rows("iteration_0", "iterations_0"),
                  _pieces(("the prompt", _chunks(n, chunk, p - (n - 1) * chunk, "prefill"),
                           f"{n:,} chunks")), "prompt tokens"),
        StoryStep("ttft", "6. Its first token comes a little later",
                  f"The first token comes when the {'last chunk' if n > 1 else 'iteration'} "
                  f"ends: **{fmt_seconds(ttft)}** "
                  f"instead of {fmt_seconds(prefill)} ({v['ttft_increase_0']:+.1%}): each chunk "
                  "shares its iteration with the decodes.",
                  rows("ttft_0", "ttft_increase_0"),
                  _pieces(("one pass", [("prefill", prefill * ms)], fmt_seconds(prefill)),
                          ("chunked", _chunks(n, iteration * ms, last * ms, "prefill"),
                           fmt_seconds(ttft)))),
        StoryStep("stall", "7. But no stream waits longer than one iteration",
                  f"Unchunked, the streams get no token during the whole prompt's iteration "
                  f"({fmt_seconds(prefill)}) and wait for the decode step after it "
                  f"({fmt_seconds(step)}): their longest wait is **{fmt_seconds(wait)}**. Chunked, "
                  f"every iteration carries their token, so they wait at most one iteration, "
                  f"**{fmt_seconds(longest)}**: {_times(wait, longest)}, and they get "
                  f"{v['decode_tokens_0']:,} tokens while the prompt goes through."
                  + (f" (Iteration against iteration, {fmt_seconds(prefill)} / "
                     f"{fmt_seconds(longest)} = {v['stall_reduction_0']:,.3g}: what the source "
                     "article calls 'a 14-fold reduction in the stall'.)" if ex.at_seed else ""),
                  rows("wait_unchunked_s", "stall_reduction_0", "wait_reduction_0",
                       "decode_tokens_0"),
                  _pieces(("unchunked", [("prefill", prefill * ms), ("decode", step * ms)],
                           fmt_seconds(wait)),
                          ("chunked", [("decode", longest * ms)], fmt_seconds(longest)))),
    ]
    return out


def sections(ex: WorkedExample, core: list[StoryStep]) -> list[Section]:
    """The side topics, each in its own section; every step of the example not in the core chain
    lands in exactly one of them (unknown ones in the last, so none is ever dropped)."""
    shown = {s.key for step in core for s in step.steps}
    rest = [s for s in ex.steps if s.key not in shown]

    def take(test) -> list[Step]:
        picked = [s for s in rest if test(s.key)]
        for s in picked:
            rest.remove(s)
        return picked

    budgets = ex.inputs["budgets"]
    second = (f"The source article also prices budget {budgets[1]:,}: a longer iteration, fewer "
              "of them, a sooner first token, and a longer wait for the streams."
              if len(budgets) > 1 else "")
    out = [
        Section("second-budget", "A second budget", second,
                take(lambda k: k.endswith(tuple(f"_{i}" for i in range(1, len(budgets)))))),
        Section("kv", "The KV cache, and what later chunks re-read",
                "Each token a request holds keeps its keys and values (its KV cache) in GPU memory. "
                "A later chunk attends to every earlier token of the prompt, so it reads their KV "
                "again: small at this prompt length.",
                take(lambda k: k in ("kv_bytes_per_token", "prompt_kv_bytes", "decode_kv_read_s")
                     or k.startswith("reread_"))),
        Section("long-prompt", f"A {ex.inputs['long_prompt']:,}-token prompt",
                "The re-reads grow with the square of the prompt: at this length they are large.",
                take(lambda k: k.startswith("long_prompt_"))),
        Section("burst", f"A burst of {ex.inputs['burst']:,} prompts",
                "Prompts that arrive together drain one chunk per iteration: the last one waits "
                "for all the others.", take(lambda k: k.startswith("burst_"))),
    ]
    leftover = take(lambda k: True)
    if leftover:
        out.append(Section("other", "Other steps", "", leftover))
    return [s for s in out if s.steps]


def slips(ex: WorkedExample) -> list[tuple[str, str]]:
    """(step title, what the source article rounds or gets wrong there), at its own inputs."""
    return [(s.title, s.seed_note) for s in ex.steps if s.seed_note]


def last_chunk_step(lc: LastChunk) -> StoryStep:
    """The prompt's last chunk as a story step: what the full chunks leave, what its iteration
    carries and costs in the sidebar's mode against a full one, and the rows its GEMMs compute
    (whole tiles, and the empty ones' time, in the calibrated mode; none in the others)."""
    it, full, d = lc.final, lc.full, lc.decodes
    carries = (f"its iteration carries {it.tokens:,} tokens (the {fmt_counted(d, 'decode')} and "
               "the chunk)" if d else f"its iteration carries its {it.tokens:,} tokens alone (no "
               "stream is running)")
    cost = f"**{fmt_seconds(it.time_s)}** in the {lc.mode} mode on the {lc.gpu}"
    if full is None:
        said = f"The whole {lc.last:,}-token prompt is one chunk: {carries} and takes {cost}."
    elif lc.last < lc.chunk:
        said = (f"After {fmt_counted(lc.chunks - 1, 'full chunk')} of {lc.chunk:,} tokens, the "
                f"last holds the **{lc.last:,} tokens left**: {carries} and takes {cost}, against "
                f"{fmt_seconds(full.time_s)} for the full chunk before it.")
    else:
        said = (f"{lc.chunks:,} × {lc.chunk:,} is the whole prompt, so the last chunk is as full "
                f"as the others: {carries} and takes {cost}.")
    gemms = f"{first('gemm')} kernels"
    tile = it.tile_here
    if tile is None:
        would = lc.calibrated_tile
        there = padded_rows(it.tokens, would)
        said += (f" The {lc.mode} mode has no tiles: its {gemms} compute exactly these "
                 f"{it.tokens:,} rows and waste none ("
                 + (f"the calibrated mode would compute {there:,.0f}, in tiles of {would})."
                    if there > it.tokens else
                    f"the calibrated mode's tiles of {would} would hold them exactly)."))
    elif it.wasted_rows:
        said += (f" Its {gemms} compute whole tiles of {tile} rows: ⌈{it.tokens:,} / {tile}⌉ × "
                 f"{tile} = **{it.rows:,} rows**, {it.wasted_rows:,} of them empty, which take "
                 f"{fmt_seconds(it.wasted_s)} ({fmt_percent(it.wasted_share)} of the iteration).")
    else:
        said += (f" Its {gemms} compute whole tiles of {tile} rows, and its {it.tokens:,} tokens "
                 f"fill {fmt_counted(it.rows // tile, 'tile')} exactly: no row is empty.")
    rows = [("last chunk's iteration", it, lc.last)]
    if full is not None:
        rows.insert(0, ("a full chunk's iteration", full, lc.chunk))
    picture = _pieces(*((name, [("decode", d), ("prefill", chunk), ("empty tile rows", x.wasted_rows)],
                         f"{x.rows:,} rows") for name, x, chunk in rows))
    title = ("The last chunk" + (", and its empty tile rows" if it.wasted_rows else "")
             + ("" if lc.last < lc.chunk or full is None else ": a full one"))
    return StoryStep("last-chunk", title, said, lc.steps, picture[picture.end > picture.start],
                     "rows computed")
