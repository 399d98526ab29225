"""The Memory page's words, checked against the KV sizes they quote (called by test_claims's
scenarios)."""

from __future__ import annotations

import re

from sim.errors import InputError
from sim.serving.policies import POLICIES
from sim.studies.memory import kv_pressure
from sim.units import fmt_bytes, fmt_percent
from ui.under_load import words as traffic_words

from .claims_text import SIZE, number, plain

# "- vLLM V1 keeps back 0.08 of memory: 95.5% of the KV capacity (57.6 GB = ...), they fit, ..."
VERDICT = re.compile(rf"^- (.+?) keeps? back ([\d.e+-]+) of memory: ([\d.,]+)% of the KV capacity "
                     rf"\({SIZE} = .*?\), (.*)$", re.M)
LEFT_OUT = re.compile(r"^- (.+?): the weights do not fit beside", re.M)


def engines_named(prose: str) -> list[str]:
    """"A, B and C" as its names."""
    return re.split(r", | and ", prose)


def check_memory(s, together: int) -> list[str]:
    """The Memory page's KV-pressure paragraph: each footprint is count × tokens × the model's KV
    bytes per token (the article's on its own layout); each engine is named once, with the share
    of memory its profile keeps back on this GPU at the sidebar's budget, and its verdict (it fits,
    with what to spare, or it is more than there is) against its own capacity: memory × (1 − that
    reserve) − weights."""
    cost = s.cost_model()
    try:
        pressure = kv_pressure(cost, together, s.prompt, s.decodes, s.context, s.budget)
    except InputError:
        return []   # the weights fit beside no engine's reserve: the page says so and stops
    text = plain(traffic_words.kv_pressure_story(pressure, together, s.prompt, s.decodes, s.context))
    article, here = re.split(r"\s+Here, ", text)
    m = s.model
    per = 2 * m.layers * m.kv_heads * m.head_dim * m.kv_bytes_per_element / cost.kv_shards
    total = (together * s.prompt + s.decodes * s.context) * per
    prompts = rf"(one|[\d,]+) (?:simultaneous )?([\d,]+)-token prompts? needs? {SIZE}"
    streams = rf"(one|[\d,]+) streams? at ([\d,]+) tokens of context (?:each )?needs? (?:another )?{SIZE}"
    problems = []
    for where, layout, expected in ((article, 2 * 32 * 8 * 128 * 2, [(20, 8192), (64, 4000)]),
                                    (here, per, [(together, s.prompt), (s.decodes, s.context)])):
        found = [(number(n), number(t), size) for pattern in (prompts, streams)
                 for n, t, size in re.findall(pattern, where)]
        for n, t, size in found:
            if size != fmt_bytes(n * t * layout):
                problems.append(f"{n} × {t} tokens are said to need {size}, not "
                                f"{fmt_bytes(n * t * layout)}")
        said = {(n, t) for n, t, _ in found}
        for n, t in expected:
            if n and t and (n, t) not in said:
                problems.append(f"{n} × {t} tokens held, and the paragraph does not size them")
    if ("no prompts are held" in here) != (not together * s.prompt):
        problems.append(f"'no prompts are held' said or left out wrongly ({together} prompts)")
    if ("no streams are running" in here) != (not s.decodes * s.context):
        problems.append(f"'no streams are running' said or left out wrongly ({s.decodes} streams)")
    if total:
        problems += _check_verdicts(s, cost, here, total)
    return problems


def _check_verdicts(s, cost, here: str, total: float) -> list[str]:
    """Each engine's verdict against its own capacity, its reserve read off its profile here."""
    reserve, capacity = {}, {}
    for spec in POLICIES.values():
        reserve[spec.engine] = spec.profile.reserve(cost, s.budget)
        capacity[spec.engine] = s.gpu.memory_bytes * (1 - reserve[spec.engine]) - cost.weight_bytes
    problems, named = [], []
    for engines, share_of_memory, share, shown, verdict in VERDICT.findall(here):
        for engine in engines_named(engines):
            named.append(engine)
            if engine not in capacity:
                problems.append(f"{engine!r} is not an engine the lab runs")
                continue
            kv = capacity[engine]
            if share_of_memory != f"{reserve[engine]:.4g}":
                problems.append(f"{engine} is said to keep back {share_of_memory} of memory, its "
                                f"profile {reserve[engine]:.4g}")
            if (f"{share}%", shown) != (fmt_percent(total / kv), fmt_bytes(kv)):
                problems.append(f"{share}% of {shown} under {engine}, not {total / kv:.3%} of "
                                f"{fmt_bytes(kv)} (memory × (1 − its reserve) − weights)")
            if verdict.startswith("more than there is") != (total > kv):
                problems.append(f"{fmt_bytes(total)} of KV against {engine}'s {fmt_bytes(kv)}: "
                                f"'{verdict}' is wrong")
            spare = re.fullmatch(rf"they fit, with {SIZE} to spare\.", verdict)
            if spare and spare[1] != fmt_bytes(kv - total):
                problems.append(f"{spare[1]} to spare under {engine}, not {fmt_bytes(kv - total)}")
    for engines in LEFT_OUT.findall(here):
        for engine in engines_named(engines):
            named.append(engine)
            if capacity.get(engine, 0) > 0:
                problems.append(f"{engine} is said to have no room beside the weights; it has "
                                f"{fmt_bytes(capacity[engine])}")
    for engine in capacity:
        if named.count(engine) != 1:
            problems.append(f"{engine}'s KV capacity is named {named.count(engine)} times, not "
                            f"once: {here}")
    return problems
