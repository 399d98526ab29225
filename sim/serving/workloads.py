"""Workloads: who arrives when, with how long a prompt and how many output tokens.

A workload is columnar (numpy arrays), seeded and reproducible. `prefilled` marks requests that are
already streaming at their arrival time: their prompt is the context already in the KV cache, and
their previous token was emitted at that instant (the source articles' "D decoders already streaming").
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass

import numpy as np

from sim.ceilings import MAX_REQUESTS, MAX_STREAMS, MAX_TOKENS
from sim.errors import InputError, check_number
from sim.serving.length_traces import sharegpt_lengths

# ShareGPT lengths (openchat_sharegpt4 as used by Sarathi-Serve, Llama-2 tokenizer; the trace in
# sim/serving/data/): prompt median 1,730 / P90 5,696; output median 415 / P90 834; outputs at
# most 1,024 (capped when the trace was made); prompt + output <= 8,192 (longer requests were
# filtered out of the trace).
SHAREGPT_PROMPT = (1730, 5696)
SHAREGPT_OUTPUT = (415, 834)
SHAREGPT_MAX_TOTAL = 8192
SHAREGPT_MAX_OUTPUT = 1024

# --lengths: how a Poisson workload's requests get their lengths
LENGTHS = ("fixed", "uniform", "sharegpt", "sharegpt-trace")
# each choice of lengths as a reader is shown it (a link and the command line spell its key)
LENGTH_NAMES = {"fixed": "Fixed lengths", "uniform": "Uniform lengths, 1 to the most",
                "sharegpt": "ShareGPT-like lengths, drawn",
                "sharegpt-trace": "ShareGPT lengths, recorded order"}
OWN_LENGTHS = ("sharegpt", "sharegpt-trace")   # these take no prompt or output tokens of the user


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

    @functools.cached_property
    def digest(self) -> str:
        """A hash of its name and rows: two workloads with the same are one, so a run of either
        is one cache entry (sim/serving/run.py), an uploaded trace known by its rows."""
        h = hashlib.sha256(self.name.encode())
        for column in (self.arrival_s, self.prompt, self.output, self.prefilled):
            h.update(np.ascontiguousarray(column).tobytes())
        return h.hexdigest()

    def __eq__(self, other) -> bool:
        return isinstance(other, Workload) and self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def _count(name, value, high=MAX_TOKENS):
    return check_number(name, value, high=high, integer=True)


def make_workload(arrival_s, prompt, output, prefilled=None, name="workload") -> Workload:
    arrival = np.asarray(arrival_s, dtype=np.float64)
    order = np.argsort(arrival, kind="stable")
    flags = np.zeros(len(arrival), bool) if prefilled is None else np.asarray(prefilled, bool)
    return Workload(arrival[order], np.asarray(prompt, np.int64)[order],
                    np.asarray(output, np.int64)[order], flags[order], name)


@dataclass(frozen=True)
class Textbook:
    """The source article's worked example, declared once: `decodes` requests streaming with
    `context` tokens cached, each with `decode_output` tokens still to come, while one
    `prompt`-token request arrives and emits `prompt_output`; its budget fits every decode and a
    `chunk` of the prompt, and it is set against `compared_budget`; its burst is `burst` such
    prompts at once. The knob table (sim/knobs.py) takes its defaults from here."""
    decodes: int = 64
    context: int = 4000
    prompt: int = 8192
    decode_output: int = 256
    prompt_output: int = 32
    chunk: int = 512
    compared_budget: int = 2048
    burst: int = 10

    @property
    def budget(self) -> int:
        """Every decode and a chunk: 64 + 512 = 576."""
        return self.decodes + self.chunk


TEXTBOOK = Textbook()


def textbook(workload: Workload) -> bool:
    """Whether `workload` is the source article's scenario (`textbook_scenario`: streams running,
    one new prompt), whose runs are read as the stall and its fix."""
    return workload.name == "textbook"


def prompts_together(workload: Workload) -> bool:
    """Whether `workload` is a burst (`burst`): its new prompts arrive together, so the last one's
    first token is when the burst has drained."""
    return workload.name == "burst"


def described(workload: Workload) -> str:
    """The workload as a table's header names it: "Poisson arrivals, sharegpt lengths"."""
    if workload.name.startswith("poisson-"):
        return f"Poisson arrivals, {workload.name.split('-', 1)[1]} lengths"
    return {"textbook": "the worked example's scenario", "burst": "a burst",
            "trace": "the trace"}.get(workload.name, workload.name)


def textbook_scenario(decodes=TEXTBOOK.decodes, context=TEXTBOOK.context, prompt=TEXTBOOK.prompt,
                  decode_output=TEXTBOOK.decode_output, prompt_output=TEXTBOOK.prompt_output,
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
        np.r_[np.ones(d, bool), False], name="textbook")


def burst(n, prompt=TEXTBOOK.prompt, output=TEXTBOOK.prompt_output, decodes=0,
          context=TEXTBOOK.context, decode_output=TEXTBOOK.decode_output) -> Workload:
    """`n` prompts arrive together at t=0 while `decodes` requests stream."""
    count = _count("burst", n, MAX_STREAMS)
    d = check_number("decodes", decodes, low=0, low_inclusive=True, high=MAX_STREAMS, integer=True)
    return make_workload(
        np.zeros(d + count), np.r_[np.full(d, _count("context", context)), np.full(count, _count("prompt", prompt))],
        np.r_[np.full(d, _count("decoder output", decode_output)), np.full(count, _count("output", output))],
        np.r_[np.ones(d, bool), np.zeros(count, bool)], name="burst")


def _bisect(f, lo: float, hi: float) -> float:
    """The x in [lo, hi] where increasing `f` crosses 0 (to a millionth of the bracket)."""
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


class _KeptLognormal:
    """A lognormal's draws over whole tokens 1..len(kept), each token count k kept with
    probability kept[k - 1] and the rest thrown away (its density at k stands for the draws
    that round to k)."""

    def __init__(self, kept: np.ndarray):
        self.tokens = np.arange(1, len(kept) + 1)
        self.log_tokens = np.log(self.tokens)
        self.weight = kept / self.tokens

    def cdf(self, mu: float, sigma: float) -> np.ndarray:
        cdf = np.cumsum(np.exp(-0.5 * ((self.log_tokens - mu) / sigma) ** 2) * self.weight)
        return cdf / cdf[-1]

    def quantile(self, mu: float, sigma: float, q: float) -> float:
        return float(np.interp(q, self.cdf(mu, sigma), self.tokens))

    def fit(self, median: float, p90: float) -> tuple[float, float]:
        """(mu, sigma) whose kept draws have this median and P90. Fitting the plain lognormal
        to them and then throwing draws away would make the ShareGPT-like prompts' P90 a fifth
        shorter than the trace's (4,601 tokens against 5,696). Found by bisection: sigma for the P90 and, for each
        sigma, the mu that gives the median (each quantile grows with each over the
        brackets)."""
        def mu_for(sigma):
            return _bisect(lambda mu: self.quantile(mu, sigma, 0.5) - median,
                           math.log(median) - 3 * sigma, self.log_tokens[-1] + 3 * sigma)

        sigma = _bisect(lambda s: self.quantile(mu_for(s), s, 0.9) - p90, 0.05, 3.0)
        return float(mu_for(sigma)), float(sigma)


@functools.cache
def sharegpt_fits() -> tuple[tuple[float, float], tuple[float, float]]:
    """(mu, sigma) of the prompt's and of the output's lognormal, fitted so that the pairs
    `sharegpt_like` keeps have the trace's medians and P90s. An output is kept up to 1,024
    tokens; a prompt of k tokens is kept when its output fits in 8,192 - k tokens, which the
    output's kept CDF gives (every prompt up to 7,168 tokens)."""
    outputs = _KeptLognormal(np.ones(SHAREGPT_MAX_OUTPUT))
    output = outputs.fit(*SHAREGPT_OUTPUT)
    room = SHAREGPT_MAX_TOTAL - np.arange(1, SHAREGPT_MAX_TOTAL)   # output tokens left, >= 1
    prompt_kept = outputs.cdf(*output)[np.minimum(room, SHAREGPT_MAX_OUTPUT) - 1]
    prompt = _KeptLognormal(prompt_kept).fit(*SHAREGPT_PROMPT)
    return prompt, output


def sharegpt_like(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` (prompt, output) pairs from the fitted lognormals, drawn again while a pair falls
    outside the trace's limits (an output over 1,024 tokens, prompt + output over 8,192): the
    trace filtered such requests out, so clipping them to the limit would pile them up there."""
    prompt_fit, output_fit = sharegpt_fits()
    prompt, output, kept = [], [], 0
    while kept < count:
        draws = 3 * (count - kept) + 64   # about half of the pairs fall within the limits
        p = np.rint(rng.lognormal(*prompt_fit, draws))
        o = np.rint(rng.lognormal(*output_fit, draws))
        ok = (p >= 1) & (o >= 1) & (o <= SHAREGPT_MAX_OUTPUT) & (p + o <= SHAREGPT_MAX_TOTAL)
        prompt.append(p[ok])
        output.append(o[ok])
        kept += int(ok.sum())
    return (np.concatenate(prompt)[:count].astype(np.int64),
            np.concatenate(output)[:count].astype(np.int64))


def poisson(n, qps, *, seed=0, lengths="fixed", prompt=1024, output=128,
            prompt_range=None, output_range=None) -> Workload:
    """`n` requests with exponential inter-arrival gaps at `qps`. Lengths: ``fixed`` (prompt,
    output), ``uniform`` (integers in the inclusive ranges), ``sharegpt`` (lognormals fitted to
    the ShareGPT trace's medians and P90s within its limits, see `sharegpt_like`) or
    ``sharegpt-trace`` (`n` consecutive requests of the trace itself from an offset the seed
    picks, see `sim.serving.length_traces`)."""
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
        p, o = sharegpt_like(rng, count)
    elif lengths == "sharegpt-trace":
        p, o = sharegpt_lengths(count, seed)
    else:
        raise InputError(f"unknown lengths {lengths!r}; choose {', '.join(LENGTHS[:-1])} or "
                         f"{LENGTHS[-1]}")
    return make_workload(arrival, p, o, name=f"poisson-{lengths}")
