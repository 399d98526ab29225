"""The Prefix caching page's words, checked against its two runs (called by test_claims's
scenarios and by tests/ui/test_prefix_caching_words.py): every number recomputed from the traces
with numpy, the regime from what the runs did, each verb from the direction its numbers show."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from sim.errors import InputError
from sim.serving.policies import Limits, engine_max_seqs, get_policy, lane_budget
from sim.serving.run import Run
from sim.units import fmt_seconds
from ui.under_load import prefix_caching_words as words

SAVED = re.compile(r"computed ([\d,]+) prompt tokens instead of ([\d,]+): ([\d,]+) saved "
                   r"\(([\d,]+) − ([\d,]+)\), read from the cache instead \(hit rate ([\d.]+)% = "
                   r"([\d,]+) hit tokens / ([\d,]+) looked up\)")
TTFT = re.compile(r"The median time to first token (.+), the p99 (.+)$")
RUN_CHUNKS = re.compile(r"([\d,]+) prefill chunks without the cache, ([\d,]+) with")
ALONE = re.compile(r"⌈([\d,]+) / ([\d,]+)⌉ = ([\d,]+), ⌈\(([\d,]+) − ([\d,]+)\) / ([\d,]+)⌉ = "
                   r"([\d,]+)")
UNREAD = re.compile(r"up to ([\d,]+) tokens of the requests' own blocks sat cached, unread")
MEANS = re.compile(r"mostly from shorter (queues|prefills): a request's mean wait from its arrival "
                   r"to its first chunk (.+), its mean prefill, first chunk to first token, (.+)\.$")


def served(s, requests: int, qps: float, prefix: int, share: float, prompt: int, output: int,
           order: str = "fcfs", seed: int = 0, arrivals: str = "poisson"):
    """The page's workload and its runs with caching off and on (as the page builds them), or
    None where the simulator refuses them."""
    workload = words.shared_workload(arrivals, requests, qps, seed, prompt, output, prefix, share)
    spec, cost = get_policy(s.chunked), s.cost_model()
    try:
        budget = lane_budget(spec, workload, s.budget)
        base = Limits(max_seqs=engine_max_seqs(spec, cost, budget), order=order,
                      max_iterations=200_000)
        traces = {x: Run(workload=workload, policy=spec, cost=cost, budget=budget,
                         limits=replace(base, prefix_caching=x)).simulate() for x in ("off", "on")}
    except InputError:   # SimulationLimitError among them
        return None
    return workload, traces, spec.profile.kv_block_tokens


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def change_words(before: float, after: float) -> str:
    """The verb phrase fmt_change must use for two times, from their shown values."""
    a, b = fmt_seconds(before), fmt_seconds(after)
    if a == b:
        return f"stays at {a}"
    return f"{'falls' if after < before else 'rises'} from {a} to {b}"


def check_said(workload, traces, block: int) -> list[str]:
    """The sentences against the traces; the problems found."""
    off, on = (words.outcome(traces[x], block) for x in ("off", "on"))
    sharing = words.sharing(workload)
    ideal = words.ideal_hits(workload, block)
    said = words.claims(off, on, ideal, sharing, len(workload))
    problems = []
    # the ideal by hand: every sharer but the first finds the whole blocks of its shared tokens
    hand = sum(min(int(workload.prefix_tokens[r]), int(workload.prompt[r]) - 1) // block * block
               for r in np.flatnonzero(workload.prefix_tokens > 0)[1:]) if sharing else 0
    if ideal != hand:
        problems.append(f"ideal hits {ideal} is not {hand}")
    computed = {x: int(traces[x].chunk_length.sum()) for x in traces}
    hits = int(traces["on"].cached_tokens.sum())
    held = traces["on"].kv_used_tokens + traces["on"].kv_cached_tokens
    full = bool((traces["on"].kv_capacity_tokens - held < block).any())
    expected = (words.NOTHING if not hand else words.NO_HITS if not hits else
                words.HITS if hits >= hand else words.EVICTED if full else words.EARLY)
    if said.regime != expected:
        problems.append(f"regime {said.regime}, the runs show {expected}")
    text = "\n".join(said.sentences)
    m = SAVED.search(text)
    if expected in (words.NOTHING, words.NO_HITS):
        if m:
            problems.append(f"{expected}: yet a saving is claimed: {text}")
    elif not m:
        problems.append(f"no saving stated: {text}")
    else:
        numbers = [_count(g) for g in m.groups()[:5]] + [_count(g) for g in m.groups()[6:]]
        looked = int(traces["on"].looked_up_tokens.sum())
        truth = [computed["on"], computed["off"], computed["off"] - computed["on"],
                 computed["off"], computed["on"], hits, looked]
        if numbers != truth:
            problems.append(f"the saving's numbers {numbers} are not the runs' {truth}")
        if m.group(6) != f"{100 * hits / looked:.1f}":
            problems.append(f"hit rate {m.group(6)}% is not {hits} / {looked}")
    if expected == words.NOTHING and computed["off"] != computed["on"]:
        problems.append("nothing to share, yet the runs computed different prompt tokens")
    for request in np.flatnonzero(traces["on"].preemptions == 0):
        mine = traces["on"].chunk_length[traces["on"].chunk_request == request].sum()
        if mine + traces["on"].cached_tokens[request] != workload.prompt[request]:
            problems.append(f"request {request}: computed + cached is not its prompt")
            break
    m = TTFT.search(text)
    ttft = {x: _ttft(traces[x]) for x in traces}
    for p, phrase in zip((50, 99), m.groups() if m else ("", "")):
        want = change_words(np.percentile(ttft["off"], p), np.percentile(ttft["on"], p))
        if phrase != want:
            problems.append(f"TTFT p{p} says '{phrase}', the runs '{want}'")
    shared, prompt = words.shared_prompt(workload)
    verdict = words.verdict(off, on, said.regime, sharing, shared, prompt, block,
                            traces["on"].budget)
    return problems + check_verdict(verdict, workload, traces, block)


def check_verdict(verdict: str, workload, traces, block: int) -> list[str]:
    """The page's closing sentence against the runs: the cause it gives is the one they show (no
    whole block shared; nothing cached yet; fewer chunks only where a prompt alone needs fewer at
    the budget and the run's count fell; the first token's gain put on the mean wait or the mean
    prefill, whichever fell more), with their numbers."""
    problems = []
    sharers = np.flatnonzero(workload.prefix_tokens > 0) if workload.prefix_tokens is not None \
        else np.array([], np.int64)
    hits = int(traces["on"].cached_tokens.sum())
    if not hits and len(sharers) >= 2 and workload.prefix_tokens.max() < block:
        want = f"is shorter than one {block}-token block"
        if want not in verdict:
            problems.append(f"no hit for a prefix shorter than a block, yet not said: {verdict}")
        peak = int(traces["on"].kv_cached_tokens.max()) if len(traces["on"].kv_cached_tokens) \
            else 0
        m = UNREAD.search(verdict)
        if (_count(m.group(1)) if m else 0) != peak:
            problems.append(f"cached blocks nobody reads peak at {peak:,} tokens: {verdict}")
    if "nothing was cached" in verdict or "nothing cached" in verdict:
        if not len(sharers) or workload.prefix_tokens.max() < block:
            problems.append(f"'nothing cached' where no whole block is shared: {verdict}")
    chunks = {x: len(traces[x].chunk_length) for x in traces}
    m = RUN_CHUNKS.search(verdict)
    if m and [_count(g) for g in m.groups()] != [chunks["off"], chunks["on"]]:
        problems.append(f"chunk counts {m.groups()} are not the runs' {chunks}")
    if hits:
        r = sharers[np.argmax(workload.prefix_tokens[sharers])]
        size, whole = int(workload.prompt[r]), traces["on"].budget
        hit = min(int(workload.prefix_tokens[r]), size - 1) // block * block
        alone = (-(-size // whole), -(-(size - hit) // whole))
        m = ALONE.search(verdict)
        if not m or [_count(g) for g in m.groups()] != [size, whole, alone[0], size, hit, whole,
                                                        alone[1]]:
            problems.append(f"a prompt alone takes {alone} chunks at {whole}: {verdict}")
        fewer = alone[1] < alone[0] and chunks["on"] < chunks["off"]
        not_fewer = "chunk count unchanged" in verdict or "yet not the run's" in verdict
        if fewer == not_fewer or ("in fewer chunks" in verdict and not fewer):
            problems.append(f"fewer chunks is {fewer} of the runs {chunks}: {verdict}")
    m = MEANS.search(verdict)
    if m:
        means = {x: _means(traces[x]) for x in traces}
        fell = [means["off"][i] - means["on"][i] for i in (0, 1)]
        if max(fell) <= 0 or m.group(1) != ("queues" if fell[0] > fell[1] else "prefills"):
            problems.append(f"the mean wait fell {fell[0]} s, the prefill {fell[1]} s: {verdict}")
        for i, phrase in enumerate(m.groups()[1:]):
            want = change_words(means["off"][i], means["on"][i])
            if phrase != want:
                problems.append(f"mean {('wait', 'prefill')[i]} says '{phrase}', the runs '{want}'")
    return problems


def _means(trace) -> tuple[float, float]:
    """A new request's mean arrival -> first chunk's iteration start, and that start -> its first
    token (seconds)."""
    new = np.flatnonzero(~trace.prefilled)
    first_chunk = np.array([np.flatnonzero(trace.chunk_request == r)[0] for r in new])
    start = trace.start_s[trace.chunk_iteration[first_chunk]]
    first_token = np.array([trace.tokens_of(r)[0] for r in new])
    return float((start - trace.arrival_s[new]).mean()), float((first_token - start).mean())


def _ttft(trace) -> np.ndarray:
    new = np.flatnonzero(~trace.prefilled)
    first = np.array([trace.tokens_of(r)[0] for r in new])
    return first - trace.arrival_s[new]


def check_prefix(s, burst: int) -> list[str]:
    """The page's words on a small workload drawn from the scenario: the sidebar's chunked engine,
    GPU, model and budget, a prefix as long as its prompt, `burst` setting the load and share."""
    run = served(s, requests=12 * burst, qps=3.0 * burst, prefix=s.prompt,
                 share=1.0 if burst % 2 else 0.5, prompt=max(1, s.decodes), output=16,
                 arrivals="burst" if burst == 4 else "poisson")
    return [] if run is None else check_said(*run)
