"""Request lengths as a real service saw them: the ShareGPT trace Sarathi-Serve replays.

The trace (docs/sources.md, ShareGPT request lengths) ships in `sim/serving/data/` with its
source and licence: 30,731 requests, one per row, prompt and output tokens (Llama-2 tokenizer,
requests over 8,192 total tokens filtered out upstream, outputs capped at 1,024 when they were
generated). Rows that follow each other are often successive turns of one conversation (prompts
74 -> 290 -> 1,402 -> 2,497 tokens, each turn carrying the last), so a sample is a run of
consecutive rows from an offset the seed picks, not rows drawn apart: a conversation stays
together. A run longer than what is left of the file goes on from its first row.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from sim.ceilings import MAX_REQUESTS
from sim.errors import InputError, check_number

SHAREGPT_TRACE = Path(__file__).parent / "data" / "sharegpt_8k_lengths.csv"
SHAREGPT_TRACE_COLUMNS = ("num_prefill_tokens", "num_decode_tokens")   # upstream's names


@functools.cache
def sharegpt_trace() -> tuple[np.ndarray, np.ndarray]:
    """Every row of the shipped trace, in file order: (prompt tokens, output tokens), int64,
    read-only (read once per process)."""
    with open(SHAREGPT_TRACE, encoding="utf-8") as f:
        header = tuple(name.strip() for name in f.readline().split(","))
        if header != SHAREGPT_TRACE_COLUMNS:
            raise InputError(f"{SHAREGPT_TRACE.name}: header {header}, expected {SHAREGPT_TRACE_COLUMNS}")
        table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    prompt, output = np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(table[:, 1])
    for column in (prompt, output):
        column.flags.writeable = False
    return prompt, output


def sharegpt_lengths(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`count` consecutive requests of the ShareGPT trace: (prompt tokens, output tokens), new
    int64 arrays. The first row is picked by `seed` (uniform over the file's rows, from
    numpy's default generator seeded with `seed`); the same seed gives the same rows."""
    n = int(check_number("requests", count, high=MAX_REQUESTS, integer=True))
    seed = int(check_number("seed", seed, low=0, low_inclusive=True, integer=True, high=2**63))
    prompt, output = sharegpt_trace()
    offset = int(np.random.default_rng(seed).integers(len(prompt)))
    rows = (offset + np.arange(n)) % len(prompt)
    return prompt[rows], output[rows]
