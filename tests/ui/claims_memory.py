"""The Memory page's words, checked against the KV sizes they quote (called by test_claims's
scenarios)."""

from __future__ import annotations

import re

from sim.errors import InputError
from sim.serving.engine import RESERVE_FRACTION
from sim.studies.memory import kv_pressure
from sim.units import fmt_bytes, fmt_percent
from ui.under_load import words as traffic_words

from .claims_text import SIZE, number, plain


def check_memory(s, together: int) -> list[str]:
    """The Memory page's KV-pressure paragraph: each footprint is count × tokens × the model's KV
    bytes per token (the article's on its own layout), the verdict (it fits, with what to spare, or
    it is more than there is) the capacity's: memory × (1 − reserve) − weights."""
    cost = s.cost_model()
    try:
        pressure = kv_pressure(cost, together, s.prompt, s.decodes, s.context)
    except InputError:
        return []   # the weights do not fit: the page says so and stops
    text = plain(traffic_words.kv_pressure_story(pressure, together, s.prompt, s.decodes, s.context))
    article, here = re.split(r"\s+Here, ", text)
    m = s.model
    per = 2 * m.layers * m.kv_heads * m.head_dim * m.kv_bytes_per_element / cost.kv_shards
    capacity = s.gpu.memory_bytes * (1 - RESERVE_FRACTION) - cost.weight_bytes
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
    if ("more than there is" in here) != (total > capacity):
        problems.append(f"{fmt_bytes(total)} of KV against {fmt_bytes(capacity)}: the verdict is "
                        "wrong")
    for shown in re.findall(rf"with {SIZE} to spare", here):
        if shown != fmt_bytes(capacity - total):
            problems.append(f"{shown} to spare, not {fmt_bytes(capacity - total)}")
    shares = re.findall(rf"([\d.,e+-]+)% of the KV capacity \({SIZE}\)", here)
    if not shares and total:
        problems.append(f"the share of the KV capacity is not said: {here}")
    for share, shown in shares:
        if (share, shown) != (fmt_percent(total / capacity).removesuffix("%"), fmt_bytes(capacity)):
            problems.append(f"{share}% of {shown}, not {total / capacity:.3%} of "
                            f"{fmt_bytes(capacity)}")
    return problems
