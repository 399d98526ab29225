"""Workloads: who arrives when, with how long a prompt and how many output tokens.

A workload is columnar (numpy arrays), seeded and reproducible. `prefilled` marks requests that are
already streaming at their arrival time: their prompt is the context already in the KV cache, and
their previous token was emitted at that instant (the source articles' "D decoders already streaming").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.ceilings import MAX_REQUESTS, MAX_STREAMS, MAX_TOKENS
from sim.errors import InputError, check_number

# ShareGPT-like lengths (openchat_sharegpt4 as used by Sarathi-Serve, Llama-2 tokenizer):
# prompt median 1,730 / P90 5,696; output median 415 / P90 834; prompt + output <= 8,192.
SHAREGPT_PROMPT = (1730, 5696)
SHAREGPT_OUTPUT = (415, 834)
SHAREGPT_MAX_TOTAL = 8192
Z90 = 1.2815515655446004   # standard normal 90th percentile


@dataclass(frozen=True, eq=False)
class Workload:
    arrival_s: np.ndarray    # float64, sorted ascending
    prompt: np.ndarray       # int64, prompt tokens (context already cached when prefilled)
    output: np.ndarray       # int64, output tokens still to emit (>= 1)
    prefilled: np.ndarray    # bool
    name: str = "workload"

    def __post_init__(self):
        n = len(self.arrival_s)
        if not (len(self.prompt) == len(self.output) == len(self.prefilled) == n):
            raise InputError("workload columns have different lengths")
        if n == 0:
            raise InputError("the workload has no requests")
        if np.any(np.diff(self.arrival_s) < 0):
            raise InputError("arrival times must be sorted")
        if np.any(self.prompt < 1) or np.any(self.output < 1):
            raise InputError("every request needs a prompt of >= 1 token and >= 1 output token")

    def __len__(self) -> int:
        return len(self.arrival_s)


def _count(name, value, high=MAX_TOKENS):
    return check_number(name, value, high=high, integer=True)


def make_workload(arrival_s, prompt, output, prefilled=None, name="workload") -> Workload:
    arrival = np.asarray(arrival_s, dtype=np.float64)
    order = np.argsort(arrival, kind="stable")
    flags = np.zeros(len(arrival), bool) if prefilled is None else np.asarray(prefilled, bool)
    return Workload(arrival[order], np.asarray(prompt, np.int64)[order],
                    np.asarray(output, np.int64)[order], flags[order], name)


def seed_scenario(decodes=64, context=4000, prompt=8192, decode_output=256, prompt_output=32,
                  arrival_s=0.0) -> Workload:
    """The source article's scenario: `decodes` requests streaming with `context` tokens cached, each with
    `decode_output` tokens still to come; one `prompt`-token request arrives at `arrival_s`.
    The new request is the last one (id = decodes)."""
    d = check_number("decodes", decodes, low=0, low_inclusive=True, high=MAX_STREAMS, integer=True)
    ctx = _count("context", context)
    p = _count("prompt", prompt)
    arrival = check_number("arrival (s)", arrival_s, low=0, low_inclusive=True, high=1e6)
    return make_workload(
        np.r_[np.zeros(d), arrival], np.r_[np.full(d, ctx), p],
        np.r_[np.full(d, _count("decoder output", decode_output)), _count("prompt output", prompt_output)],
        np.r_[np.ones(d, bool), False], name="seed")


def burst(n, prompt=8192, output=32, decodes=0, context=4000, decode_output=256) -> Workload:
    """`n` prompts arrive together at t=0 while `decodes` requests stream."""
    count = _count("burst", n, MAX_STREAMS)
    d = check_number("decodes", decodes, low=0, low_inclusive=True, high=MAX_STREAMS, integer=True)
    return make_workload(
        np.zeros(d + count), np.r_[np.full(d, _count("context", context)), np.full(count, _count("prompt", prompt))],
        np.r_[np.full(d, _count("decoder output", decode_output)), np.full(count, _count("output", output))],
        np.r_[np.ones(d, bool), np.zeros(count, bool)], name="burst")


def _lognormal(rng, median_p90, size):
    median, p90 = median_p90
    sigma = np.log(p90 / median) / Z90
    return rng.lognormal(np.log(median), sigma, size)


def poisson(n, qps, *, seed=0, lengths="fixed", prompt=1024, output=128,
            prompt_range=None, output_range=None) -> Workload:
    """`n` requests with exponential inter-arrival gaps at `qps`. Lengths: ``fixed`` (prompt,
    output), ``uniform`` (integers in the inclusive ranges), or ``sharegpt`` (lognormals fitted to
    the ShareGPT medians and P90s, clipped so prompt + output <= 8,192)."""
    count = _count("requests", n, MAX_REQUESTS)
    rate = check_number("QPS", qps, high=1e6)
    rng = np.random.default_rng(int(check_number("seed", seed, low=0, low_inclusive=True, integer=True,
                                                  high=2**63)))
    arrival = np.cumsum(rng.exponential(1.0 / rate, count))
    if lengths == "fixed":
        p = np.full(count, _count("prompt tokens", prompt))
        o = np.full(count, _count("output tokens", output))
    elif lengths == "uniform":
        (plo, phi), (olo, ohi) = prompt_range or (1, prompt), output_range or (1, output)
        for label, lo, hi in (("prompt range", plo, phi), ("output range", olo, ohi)):
            if not (1 <= _count(label, lo) <= _count(label, hi)):
                raise InputError(f"{label} must satisfy 1 <= low <= high, got {lo}..{hi}")
        p = rng.integers(plo, phi + 1, count)
        o = rng.integers(olo, ohi + 1, count)
    elif lengths == "sharegpt":
        p = np.clip(np.rint(_lognormal(rng, SHAREGPT_PROMPT, count)), 1, SHAREGPT_MAX_TOTAL - 1)
        o = np.clip(np.rint(_lognormal(rng, SHAREGPT_OUTPUT, count)), 1, None)
        o = np.minimum(o, SHAREGPT_MAX_TOTAL - p)
    else:
        raise InputError(f"unknown lengths {lengths!r}; choose fixed, uniform or sharegpt")
    return make_workload(arrival, p, o, name=f"poisson-{lengths}")
