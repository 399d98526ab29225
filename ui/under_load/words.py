"""What the traffic pages say about their runs beyond the tables: the KV pressure of the source
article's example beside the sidebar's, the burst's drain, and the two ends of the budget dial.
Pure Python (no Streamlit)."""

from __future__ import annotations

from sim.serving.policies import POLICIES, names_in_prose
from sim.studies.memory import (
    ARTICLE_GPU_BYTES,
    ARTICLE_PRESSURE,
    KvPressure,
    article_pressure,
)
from sim.studies.stalls import STALL_S
from sim.studies.sweep import OVERHEAD_SHARE, SweepPoint
from sim.studies.worked_example import SOURCE_ARTICLE, Step
from sim.units import fmt_bytes, fmt_seconds

from ..shell.glossary import first


def _held(count: int, what: str, each: str, size: str) -> str:
    """"20 simultaneous 8,192-token prompts need 21.5 GB", or "one ... needs" for a single one."""
    if count == 1:
        return f"one {what}{each.removesuffix(' each')} needs **{size}**"
    return f"{count:,} {what}s{each} need **{size}**"


def kv_pressure_story(pressure: KvPressure, prompts: int, prompt_tokens: int, streams: int,
                      context: int) -> str:
    """The Memory page's KV-pressure paragraph: the source article's example in the lab's units,
    then the same arithmetic on the sidebar's scenario (`pressure`: sim.studies.memory.kv_pressure),
    its verdict per engine reserve (each engine's own KV capacity), chosen by whether it fits."""
    ours_prompts, ours_streams, weights = article_pressure()
    a = ARTICLE_PRESSURE
    per = ours_prompts.value / (a["prompts"] * a["prompt_tokens"])
    article = (f"The lab's source article on {first('llm')} serving, *{SOURCE_ARTICLE}*, sizes the "
               "KV cache on its example "
               f"layout ({fmt_bytes(per)} per token): {a['prompts']:,} simultaneous "
               f"{a['prompt_tokens']:,}-token prompts need **{ours_prompts.display}** of KV, a "
               f"large share of an {fmt_bytes(ARTICLE_GPU_BYTES)} GPU after {fmt_bytes(weights)} "
               f"of weights; {a['streams']:,} streams at {a['context']:,} tokens of context each "
               f"need another **{ours_streams.display}**, and memory is under pressure.")
    held_prompts = ("no prompts are held" if not (prompts and prompt_tokens) else
                    _held(prompts, f"{'simultaneous ' if prompts > 1 else ''}{prompt_tokens:,}-token "
                          "prompt", "", pressure.prompts.display))
    held_streams = ("no streams are running" if not (streams and context) else
                    _held(streams, "stream", f" at {context:,} tokens of context each",
                          pressure.streams.display))
    together = pressure.together
    here = f"Here, on the sidebar's model and GPU: {held_prompts}; {held_streams}"
    if not together.value:
        return f"{article}\n\n{here}; so the KV cache holds nothing."
    verdicts = []
    for s in pressure.shares:
        engines = names_in_prose(s.engines)
        keep = "keeps" if len(s.engines) == 1 else "keep"
        fit = ("more than there is, so the scheduler must admit them in turns or preempt"
               if s.share.value > 1 else
               f"they fit, with {fmt_bytes(s.capacity.value - together.value)} to spare")
        verdicts.append(f"- {engines} {keep} back {s.reserve:.4g} of memory: "
                        f"{s.share.display} of the KV capacity ({s.capacity.display} = "
                        f"{s.capacity.substituted}), {fit}.")
    if pressure.left_out:
        it = "it" if len(pressure.left_out) == 1 else "each"
        verdicts.append(f"- {names_in_prose(pressure.left_out)}: the weights do not fit beside "
                        f"what {it} keeps back (the table above), so no KV cache is left.")
    return (f"{article}\n\n{here}; together **{together.display}**. Against each engine's own "
            "KV capacity (memory × (1 − what it keeps back) − weights):\n\n"
            + "\n".join(verdicts))


def burst_story(step: Step, last_ttft: dict[str, float], largest_gap: dict[str, float],
                chunked: dict[str, bool], burst: int, budget: int, decodes: int,
                mode: str) -> tuple[str, str]:
    """The Traffic page's burst drain: the source article's figure, this run's last first token
    per policy beside the worked example's formula, and a caption on how far they differ and why
    (each reason only where it applies). `step`: the worked example's `burst_last_ttft_s`;
    `last_ttft`, `largest_gap`: per policy from the runs; `chunked`: whether each policy chunks.
    Returns (Markdown, caption)."""
    shown = [p for p in last_ttft if chunked[p]] or list(last_ttft)
    ran = ", ".join(f"**{POLICIES[p].label}** {last_ttft[p]:,.4f} s" for p in shown)
    if step.value is None:
        formula = (f"the worked example needs a chunk: budget − streams = {budget:,} − "
                   f"{decodes:,} ≤ 0, so its drain is undefined (the prompts starve).")
    else:
        formula = (f"the source article's arithmetic: {step.formula} = {step.substituted} = "
                   f"**{step.value:,.4f} s** (chunk = budget − streams; every iteration priced "
                   f"max(tokens × {first('flop', hover=False)} per token / peak, weight bytes / "
                   "bandwidth)).")
    story = (f"The lab's source article on {first('llm')} serving, *{SOURCE_ARTICLE}*, works "
             "out that ten 8,192-token "
             "prompts arriving together drain in about 3.7 s on its example hardware, at a "
             "512-token chunk (the sidebar's defaults: budget 576 beside 64 streams). This run: "
             f"the last of the {burst:,} prompts gets its first token after {ran} (max TTFT: "
             f"every prompt arrives at 0 s). Next to it, {formula}")
    notes = []
    compared = [p for p in shown if chunked[p]]
    if step.value is not None and compared:
        apart = max(abs(last_ttft[p] / step.value - 1) for p in compared)
        notes.append(f"The run and the formula differ by {apart:.1%} at most"
                     + (":" if apart else "."))
        if apart:
            notes.append("each prompt that finishes keeps decoding its output tokens beside the "
                         "drain, taking one token of every later iteration's chunk"
                         + (f", and the run prices iterations in the {mode} cost mode where the "
                            "formula always uses the simple arithmetic." if mode != "simple"
                            else "."))
    for p in (p for p in last_ttft if not chunked[p]):
        gap = largest_gap[p]
        notes.append(f"Unchunked, **{POLICIES[p].label}** drains the same prompts in iterations of whole prompts: "
                     f"its largest gap between two tokens is {fmt_seconds(gap)}"
                     + (f", a freeze (over {fmt_seconds(STALL_S)})." if gap > STALL_S else "."))
    return story, " ".join(notes)


def dial_ends(points: list[SweepPoint], prompts: int) -> list[str]:
    """Budget trade-off's two ends of the dial, each said of the budgets swept (Markdown bullets):
    which are overhead-dominated, and from which budget no prompt at the head of the queue is split
    (`prompts`: the workload's new requests)."""
    low, high = points[0], points[-1]
    dominated = [p for p in points if p.overhead_dominated]
    share = f"t(1) / t({low.budget:,}) = {low.fixed_share:.2f}"
    if not dominated:
        which = f"None of the budgets swept is: at the smallest, {low.budget:,}, {share}."
    else:
        which = (f"{len(dominated):,} of the {len(points):,} budgets swept "
                 f"{'is' if len(dominated) == 1 else 'are'}, up to {dominated[-1].budget:,}: at "
                 f"{low.budget:,}, {share}.")
    overhead = (f"**Overhead-dominated** (the legend's colour for it): fixed share = t(1 token) / "
                f"t(budget tokens) > {OVERHEAD_SHARE:g}, each a fresh prompt chunk priced by the cost model. Every "
                "iteration pays for reading the weights (and any per-iteration overhead) whatever "
                "its size, so a budget whose full iteration costs less than two empty ones spends "
                f"most of its time on that fixed part. {which}")
    whole = [p for p in points if p.chunking_inactive]
    split = f"{high.split_prompts:,} of {prompts:,} prompts split"
    if whole:
        where = (f"From {whole[0].budget:,} up" if whole == points[points.index(whole[0]):] else
                 "At " + ", ".join(f"{p.budget:,}" for p in whole))
        reach = (f"{where} (at or above each run's bound, {whole[0].no_split_budget:,} at "
                 f"{whole[0].budget:,}) the prompt at the head of the queue always fits "
                 "whole beside the decode tokens, as it would unchunked; only prompts behind it in the "
                 f"same iteration take a leftover chunk (at {high.budget:,}: {split}).")
    else:
        reach = (f"No budget swept reaches it: at the largest, {high.budget:,}, below its run's "
                 f"{high.no_split_budget:,}, {split}.")
    no_split = ("**No split** (the legend's colour for it): budget ≥ the longest prompt + the most "
                f"decode tokens in an iteration. {reach}")
    return [overhead, no_split]


def budget_intro(policy: str) -> str:
    """Budget trade-off's opening paragraph (Markdown): both sides of the dial, with no claim on
    which way first tokens move (the sweep's `ttft_trend` says that, from its points)."""
    return ("The token budget is a dial. A larger budget gives each iteration more prompt tokens, "
            "so a prompt needs fewer iterations; but each iteration takes longer, and every running "
            "stream waits for the whole of it (the gaps between its tokens grow). Whether first "
            "tokens come sooner depends on which of the two wins, and the sweep below says where. "
            f"Here the same workload runs under **{policy}** (the sidebar's chunked policy) at "
            "each budget from the smallest to the largest, doubling, plus your budget and the "
            f"engines' defaults. Two targets judge each budget: the median {first('ttft')} of the "
            f"new requests, and the p99 {first('tbt')}, the gap between two tokens, against a "
            f"{first('tpot')} target (the streams' {first('slo')}).")
