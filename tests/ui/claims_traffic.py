"""The Traffic and Budget trade-off pages' words, checked against their runs (called by
test_claims's scenarios)."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from sim.errors import InputError
from sim.serving.engine import SimulationLimitError, simulate
from sim.serving.metrics import request_times, token_gaps
from sim.serving.policies import POLICIES, Limits
from sim.serving.run import Run
from sim.serving.workloads import burst
from sim.studies.sweep import (
    OVERHEAD_SHARE,
    budget_grid,
    offline_tradeoff,
    recommend,
    run_point,
    ttft_trend,
)
from sim.studies.worked_example import worked_example
from sim.units import fmt_bytes, fmt_percent, fmt_seconds
from ui.shell.scenario import DECODE_OUTPUT, PROMPT_OUTPUT
from ui.under_load import words as traffic_words

from .claims_text import SIZE, STALL, TIME, number, plain


def check_sweep(s, prompts: int) -> list[str]:
    """Budget trade-off's words on a small sweep (a burst at budgets from a quarter of the
    scenario's to four times it): the recommendation's reason, which way the median first token
    moves with the budget and the two ends of the dial, each against the sweep's points."""
    workload = burst(prompts, s.prompt, PROMPT_OUTPUT, s.decodes, s.context, DECODE_OUTPUT)
    limits = Limits(max_seqs=max(1024, s.decodes + prompts), max_iterations=5_000)
    try:
        lane = Run(workload=workload, policy=POLICIES[s.chunked], cost=s.cost_model(),
                   budget=s.budget, limits=limits)
        points = [run_point(replace(lane, budget=b))
                  for b in budget_grid(max(1, s.budget // 4), s.budget * 4)]
    except (InputError, SimulationLimitError):
        return []
    problems = []
    p99 = {p.budget: p.metrics.tbt_s.p99 for p in points}
    target = sorted(p99.values())[len(p99) // 2]
    recommended, reason = recommend(points, target)
    weights = s.cost_model().weight_bytes
    problems += check_offline(points, recommended, weights,
                              plain(offline_tradeoff(points, recommended, weights)))
    problems += check_ttft_trend(points, plain(f"{traffic_words.budget_intro(s.chunked)}\n"
                                               f"{reason}\n{ttft_trend(points)}"))
    picked = re.search(rf"^([\d,]+) is the largest budget in the sweep whose p99 TBT \({TIME}\) "
                       rf"meets the {TIME} SLO", reason)
    if picked:
        b = number(picked.group(1))
        larger = [p for p in points if p.budget > b and not p.starved]
        if picked.group(2) != fmt_seconds(p99[b]) or p99[b] > target or any(
                p.meets_tbt(target) for p in larger):
            problems.append(f"'{picked.group(0)}': p99 by budget {p99}")
    elif not reason.startswith("no budget in the sweep meets"):
        problems.append(f"the recommendation's reason says neither budget nor none: {reason}")
    for b, shown in re.findall(rf"the next one, ([\d,]+), gives {TIME}", reason):
        if shown != fmt_seconds(p99[number(b)]):
            problems.append(f"budget {b}'s p99 TBT is {fmt_seconds(p99[number(b)])}, not {shown}")
    overhead, no_split = (plain(x) for x in traffic_words.dial_ends(points, prompts))
    dominated = [p.budget for p in points if p.fixed_share > OVERHEAD_SHARE]
    count = re.search(r"([\d,]+) of the ([\d,]+) budgets swept (?:is|are), up to ([\d,]+)", overhead)
    said = (number(count.group(1)), number(count.group(2)), number(count.group(3))) if count else None
    if said != ((len(dominated), len(points), dominated[-1]) if dominated else None):
        problems.append(f"overhead-dominated budgets {dominated} of {len(points)}; the page: {overhead}")
    if f"= {points[0].fixed_share:.2f}." not in overhead:
        problems.append(f"t(1) / t({points[0].budget}) is {points[0].fixed_share:.2f}: {overhead}")
    whole = [p.budget for p in points if p.budget >= p.no_split_budget]
    if ("No budget swept reaches it" in no_split) != (not whole):
        problems.append(f"budgets at or above their run's no-split bound: {whole}; the page: "
                        f"{no_split}")
    start = re.search(r"From ([\d,]+) up", no_split)
    if start and [b for b in p99 if b >= number(start.group(1))] != whole:
        problems.append(f"'{start.group(0)}' but the budgets that split nothing are {whole}")
    if f"{points[-1].split_prompts:,} of {prompts:,} prompts split" not in no_split:
        problems.append(f"{points[-1].split_prompts} of {prompts} prompts split: {no_split}")
    return problems


def check_offline(points, recommended, weight_bytes: float, text: str) -> list[str]:
    """The recommendation against an offline job's budget, each sentence against the points:
    the offline budget is the largest swept; each throughput is its output tokens / makespan; the
    pick gives up a share only where the largest budget's shown throughput is higher, and 'does
    not rise' only where it is not; each reason (fewer, fuller iterations and the weight bytes
    they save; less KV re-read; idle time; busy time) with its numbers and only where it holds."""
    pick = {p.budget: p for p in points}.get(recommended)
    if pick is None:
        return [f"no recommendation, yet the page weighs it against offline: {text}"] if text else []
    top = points[-1]
    by_budget = {p.budget: p for p in points}
    problems = []
    shown = re.findall(rf"([\d,]+) tokens / {TIME} = ([\d,]+) tokens/s(?:,| at| \()", text)
    expected = [top] if pick is top else [top, pick]
    if len(shown) != len(expected):
        problems.append(f"the throughput of budgets {[p.budget for p in expected]} is not said: {text}")
    for p, (tokens, makespan, rate) in zip(expected, shown):
        emitted = p.metrics.throughput_tokens_per_s * p.metrics.makespan_s
        if (number(tokens) != round(emitted) or makespan != fmt_seconds(p.metrics.makespan_s)
                or rate != f"{emitted / p.metrics.makespan_s:,.0f}"):
            problems.append(f"budget {p.budget:,}: {round(emitted):,} tokens over "
                            f"{fmt_seconds(p.metrics.makespan_s)}; the page: {tokens} / {makespan} "
                            f"= {rate}")
    offline = re.search(r"largest budget swept, ([\d,]+)", text) or re.search(
        r"([\d,]+) is the largest swept, so the pick gives up no throughput", text)
    if offline is None or number(offline.group(1)) != top.budget:
        problems.append(f"the offline budget is the largest swept, {top.budget:,}: {text}")
    t_pick, t_top = (round(p.metrics.throughput_tokens_per_s) for p in (pick, top))
    rises = pick is not top and t_top > t_pick
    given = re.search(r"the pick gives up ([\d.,]+%) of it \(1 − ([\d,]+) / ([\d,]+)\)", text)
    if bool(given) != rises or ("does not rise" in text) != (pick is not top and not rises):
        problems.append(f"throughput {t_pick:,} at the pick and {t_top:,} at the largest: {text}")
    if given and given.group(1) != fmt_percent(1 - pick.metrics.throughput_tokens_per_s
                                                / top.metrics.throughput_tokens_per_s):
        problems.append(f"'{given.group(0)}': throughputs {t_pick} and {t_top}")
    fewer = re.search(r"fewer(, fuller)? iterations: ([\d,]+)(?: of ([\d,]+) tokens on average)? at "
                      r"([\d,]+) against ([\d,]+)(?: of ([\d,]+) tokens on average)? at ([\d,]+)",
                      text)
    if fewer:
        a, b = by_budget[number(fewer.group(4))], by_budget[number(fewer.group(7))]
        per = {p.budget: p.scheduled_tokens / p.metrics.iterations for p in (a, b)}
        if ((a, b) != (pick, top) or number(fewer.group(2)) != a.metrics.iterations
                or number(fewer.group(5)) != b.metrics.iterations
                or not b.metrics.iterations < a.metrics.iterations
                or bool(fewer.group(1)) != (per[b.budget] > per[a.budget])
                or (fewer.group(3) and fewer.group(3) != f"{per[a.budget]:,.0f}")):
            problems.append(f"'{fewer.group(0)}': iterations {a.metrics.iterations} and "
                            f"{b.metrics.iterations}, tokens each {per}")
        saved = re.search(rf"so ([\d,]+) fewer iterations read up to {SIZE} less", text)
        count = a.metrics.iterations - b.metrics.iterations
        if not saved or number(saved.group(1)) != count or saved.group(2) != fmt_bytes(
                count * weight_bytes):
            problems.append(f"{count} fewer iterations of {fmt_bytes(weight_bytes)} each: {text}")
    elif rises and top.metrics.iterations < pick.metrics.iterations:
        problems.append(f"the largest budget runs fewer iterations and the page does not say so: {text}")
    reread = re.search(r"([\d,]+) tokens' worth at ([\d,]+) against ([\d,]+) at ([\d,]+)", text)
    if reread and ((number(reread.group(2)), number(reread.group(4))) != (pick.budget, top.budget)
                   or number(reread.group(1)) != pick.reread_tokens
                   or number(reread.group(3)) != top.reread_tokens
                   or not top.reread_tokens < pick.reread_tokens):
        problems.append(f"'{reread.group(0)}': re-read {pick.reread_tokens} and {top.reread_tokens}")
    if rises and not reread and top.reread_tokens < pick.reread_tokens:
        problems.append(f"less KV re-read at the largest budget, not said: {text}")
    idle = re.search(r"no iteration for ([\d.,]+%) of the run at [\d,]+ and ([\d.,]+%)", text)
    idle_share = {p.budget: 1 - p.busy_s / p.metrics.makespan_s for p in (pick, top)}
    if idle and (idle.groups() != (fmt_percent(idle_share[pick.budget]),
                                   fmt_percent(idle_share[top.budget]))
                 or not idle_share[top.budget] > idle_share[pick.budget] > 0
                 or not top.metrics.iterations < pick.metrics.iterations):
        problems.append(f"'{idle.group(0)}': idle shares {idle_share}")
    busy = re.search(rf"([\d,]+)'s ([\d,]+) iterations keep the GPU busy {TIME}, ([\d,]+)'s "
                     rf"([\d,]+) {TIME}", text)
    if busy and ((number(busy.group(1)), number(busy.group(4))) != (top.budget, pick.budget)
                 or number(busy.group(2)) != top.metrics.iterations
                 or number(busy.group(5)) != pick.metrics.iterations
                 or busy.group(3) != fmt_seconds(top.busy_s)
                 or busy.group(6) != fmt_seconds(pick.busy_s)
                 or top.busy_s < pick.busy_s or not top.metrics.iterations < pick.metrics.iterations):
        problems.append(f"'{busy.group(0)}': busy {top.busy_s} and {pick.busy_s} s")
    same = re.search(r"([\d,]+) takes no fewer iterations than ([\d,]+) \(([\d,]+) against "
                     r"([\d,]+)\)", text)
    if same and ((number(same.group(1)), number(same.group(2))) != (top.budget, pick.budget)
                 or (number(same.group(3)), number(same.group(4)))
                 != (top.metrics.iterations, pick.metrics.iterations)
                 or top.metrics.iterations < pick.metrics.iterations):
        problems.append(f"'{same.group(0)}': iterations {top.metrics.iterations} at the largest, "
                        f"{pick.metrics.iterations} at the pick")
    return problems


# a rule stated of every budget: "(first tokens come sooner)", "a larger budget drains prompts faster"
SOONER = re.compile(r"\(first tokens come sooner\)|larger budget (?:drains prompts faster|brings "
                    r"(?:the median )?first tokens? sooner)", re.I)


def check_ttft_trend(points, text: str) -> list[str]:
    """Budget trade-off's words on which way the median first token moves with the budget: a
    larger budget said to bring first tokens sooner (or drain prompts faster) only where p50
    TTFT falls across the whole sweep; the lowest budget, the ends and each side's direction as
    the points have them."""
    p50 = {p.budget: float(f"{p.metrics.ttft_s.p50:.12g}") for p in points
           if not np.isnan(p.metrics.ttft_s.p50)}
    if not p50:
        return []
    budgets, values = list(p50), list(p50.values())
    falling = all(a >= b for a, b in zip(values, values[1:]))
    problems = [f"'{m.group(0)}', yet p50 TTFT by budget is {p50}" for m in SOONER.finditer(text)
                if not falling]
    low = min(values)
    lowest = [b for b in budgets if p50[b] == low]
    said = re.search(rf"p50 TTFT is lowest at budgets? ([\d, ]+?) \({TIME}\)", text)
    if said is None:
        if len(lowest) < len(budgets):
            problems.append(f"the page does not say where p50 TTFT is lowest ({lowest}): {p50}")
        return problems
    if [number(b) for b in said.group(1).split(", ")] != lowest or said.group(2) != fmt_seconds(low):
        problems.append(f"'{said.group(0)}', but p50 TTFT is lowest, {fmt_seconds(low)}, at {lowest}")
    low_at, high_at = budgets.index(lowest[0]), budgets.index(lowest[-1])
    for word, side, end in (("falls", values[:low_at + 1], budgets[0]),
                            ("rises", values[high_at:], budgets[-1])):
        steady = all(a >= b for a, b in zip(side, side[1:])) if word == "falls" else \
            all(a <= b for a, b in zip(side, side[1:]))
        claim = re.search(rf"{word}(, not steadily,)? (?:from|to) {TIME} at ([\d,]+)", text)
        if len(side) > 1 and claim is None:
            problems.append(f"p50 TTFT {word} toward {end:,} ({p50}), and the page does not say so")
        elif claim and (len(side) == 1 or bool(claim.group(1)) == steady
                        or claim.group(2) != fmt_seconds(p50[end]) or number(claim.group(3)) != end):
            problems.append(f"'{claim.group(0)}': p50 TTFT by budget is {p50}")
    return problems


def check_burst(s, prompts: int) -> list[str]:
    """The Traffic page's burst drain: the last first token per policy, how far the runs are from
    the worked example's formula, and a freeze claimed for an unchunked policy only where its
    largest gap is over 100 ms, each against the runs."""
    workload = burst(prompts, s.prompt, PROMPT_OUTPUT, s.decodes, s.context, DECODE_OUTPUT)
    limits = Limits(max_seqs=max(1024, s.decodes + prompts), max_iterations=20_000)
    try:
        traces = {p: simulate(workload, POLICIES[p], s.cost_model(), budget=s.budget, limits=limits)
                  for p in (s.unchunked, s.chunked)}
    except (InputError, SimulationLimitError):
        return []   # the page refuses it, or estimates it and waits for Run
    last = {p: float(np.nanmax(request_times(t).ttft_s[~t.prefilled])) for p, t in traces.items()}
    gap = {p: float(token_gaps(t)[0].max(initial=0)) for p, t in traces.items()}
    example = worked_example(**{**s.worked_example_inputs(s.budget), "burst": prompts})
    step = next(x for x in example.steps if x.key == "burst_last_ttft_s")
    story, caption = traffic_words.burst_story(step, last, gap, {p: POLICIES[p].chunked for p in traces},
                                       prompts, s.budget, s.decodes, s.mode)
    text = plain(f"{story}\n{caption}")
    problems = []
    for p in last:
        for shown in re.findall(rf"(?:after |, ){re.escape(POLICIES[p].label)} ([\d,.]+) s(?=[ ,])",
                                text):
            if shown != f"{last[p]:,.4f}":
                problems.append(f"{p}'s last first token is said to be {shown} s, not "
                                f"{last[p]:,.4f} s")
    apart = re.search(r"differ by ([\d.]+)% at most", text)
    if apart:
        truth = abs(last[s.chunked] / step.value - 1)
        if apart.group(1) != f"{truth * 100:.1f}":
            problems.append(f"the run and the formula differ by {truth:.1%}, not {apart.group(1)}%")
    elif step.value is not None:
        problems.append("the burst drain does not say how far the run is from the formula")
    labels = {POLICIES[p].label: p for p in gap}
    for label, shown, freeze in re.findall(rf"Unchunked, (.+?) drains .*? is {TIME}(, a freeze)?",
                                           text):
        p = labels[label]
        if shown != fmt_seconds(gap[p]) or bool(freeze) != (gap[p] > STALL):
            problems.append(f"{p}'s largest gap is {fmt_seconds(gap[p])}; the page says "
                            f"{shown}{freeze}")
    return problems
