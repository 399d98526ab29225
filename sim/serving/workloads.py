"""Workloads: who arrives when, with how long a prompt and how many output tokens.

A workload is columnar (numpy arrays), seeded and reproducible. `prefilled` marks requests that are
already streaming at their arrival time: their prompt is the context already in the KV cache, and
their previous token was emitted at that instant (the source articles' "D decoders already streaming").
A workload of mixed traffic also names each request's class (chat, documents, ...), so every
command, cache and trace file that takes the workload sees which class each request is. A workload
whose prompts share their start says so in two columns, read by prefix caching
(sim/serving/kv.py `PrefixCache`): each request's group, and how many of its tokens (prompt, then
output) are the group's, the same for every request of the group as far as each goes: a shared
system prompt of S tokens (`poisson`'s `prefix_tokens`), or a conversation whose turns each
begin with the one before and its answer (`conversations`).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
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

# A request class's name: it keys the JSON's `classes`, a trace file's class column and a page's
# legend, so it is short plain text.
CLASS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
CLASS_NAME_RULE = "1 to 32 letters, digits, '_', '.' or '-', starting with a letter or digit"
MAX_CLASSES = 16
MAX_ARRIVAL_S = 1e7   # ~116 days: far beyond any trace worth replaying
PREFIX_NAME = "-prefix"   # a Poisson workload with a shared prefix: poisson-fixed-prefix2000x0.5


def check_class_name(name: str, where: str = "request class") -> str:
    """`name`, if it is a class name; else an InputError that says so after `where` (a mix
    spec's class, a trace's row and column): the one check of a class name, wherever it comes
    from. The name is quoted back as plain text (characters outside the rule as '?', cut
    short), so nothing a file holds reaches a page as markup."""
    if not isinstance(name, str) or not CLASS_NAME.fullmatch(name):
        shown = re.sub(r"[^A-Za-z0-9_.+\- ]", "?", str(name))[:40]
        raise InputError(f"{where}: {shown!r} is not a class name; a class name is "
                         f"{CLASS_NAME_RULE}")
    return name


@dataclass(frozen=True, eq=False)
class Workload:
    arrival_s: np.ndarray    # float64, sorted ascending
    prompt: np.ndarray       # int64, prompt tokens (context already cached when prefilled)
    output: np.ndarray       # int64, output tokens still to emit (>= 1)
    prefilled: np.ndarray    # bool
    name: str = "workload"
    # mixed traffic: the class names, and each request's index into them (None: no classes)
    classes: tuple[str, ...] = ()
    request_class: np.ndarray | None = None
    # prompts that share their start: each request's group (-1: none) and its tokens that are
    # the group's (None: nothing shared)
    prefix_group: np.ndarray | None = None
    prefix_tokens: np.ndarray | None = None

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
        if (self.request_class is None) != (not self.classes):
            raise InputError("a workload names its classes and each request's class, or neither")
        if self.classes:
            if len(self.classes) > MAX_CLASSES:
                raise InputError(f"{len(self.classes)} request classes; at most {MAX_CLASSES}")
            for name in self.classes:
                check_class_name(name)
            if len(set(self.classes)) < len(self.classes):
                raise InputError(f"class names repeat: {', '.join(self.classes)}")
            codes = self.request_class
            if len(codes) != n or np.any(codes < 0) or np.any(codes >= len(self.classes)):
                raise InputError("each request's class must be one of the workload's classes")
        if (self.prefix_group is None) != (self.prefix_tokens is None):
            raise InputError("a workload gives each request's prefix group and its shared "
                             "tokens, or neither")
        if self.prefix_group is not None and not (
                len(self.prefix_group) == len(self.prefix_tokens) == n
                and np.all(self.prefix_tokens >= 0)
                and np.all(self.prefix_tokens <= self.prompt + self.output)):
            raise InputError("each request shares 0 to its prompt + output tokens with its group")
        if self.prefix_group is not None and np.any((self.prefix_group < 0)
                                                    & (self.prefix_tokens > 0)):
            raise InputError("a request in no prefix group (-1) shares no tokens: give it a "
                             "group, or 0 shared tokens")

    def __len__(self) -> int:
        return len(self.arrival_s)

    def take(self, ids: np.ndarray, output: np.ndarray | None = None) -> Workload:
        """The requests `ids` (ascending) as a workload of their own, every column kept (classes,
        shared prefixes); `output` in place of theirs (a prefill instance's one token), their
        shared tokens then at most what the shorter request holds."""
        out = self.output[ids] if output is None else output
        shared = None if self.prefix_tokens is None else \
            np.minimum(self.prefix_tokens[ids], self.prompt[ids] + out)
        return Workload(self.arrival_s[ids], self.prompt[ids], out, self.prefilled[ids], self.name,
                        self.classes,
                        None if self.request_class is None else self.request_class[ids],
                        None if self.prefix_group is None else self.prefix_group[ids], shared)

    def class_labels(self) -> np.ndarray:
        """Each request's class name (empty strings for a workload without classes)."""
        if not self.classes:
            return np.full(len(self), "", dtype=object)
        return np.asarray(self.classes, dtype=object)[self.request_class]

    @functools.cached_property
    def digest(self) -> str:
        """A hash of its name and rows, each request's class included: two workloads with the same
        are one, so a run of either is one cache entry (sim/serving/run.py), an uploaded trace
        known by its rows."""
        h = hashlib.sha256(self.name.encode())
        for column in (self.arrival_s, self.prompt, self.output, self.prefilled):
            h.update(np.ascontiguousarray(column).tobytes())
        if self.classes:
            h.update(repr(self.classes).encode())
            h.update(np.ascontiguousarray(self.request_class, np.int64).tobytes())
        if self.prefix_group is not None:
            h.update(b"prefix")
            for column in (self.prefix_group, self.prefix_tokens):
                h.update(np.ascontiguousarray(column, np.int64).tobytes())
        return h.hexdigest()

    @property
    def shares_prefixes(self) -> bool:
        """Whether any two requests' prompts start alike (a group of two or more)."""
        if self.prefix_group is None:
            return False
        grouped = self.prefix_group[(self.prefix_group >= 0) & (self.prefix_tokens > 0)]
        return len(grouped) > len(np.unique(grouped))

    def __eq__(self, other) -> bool:
        return isinstance(other, Workload) and self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def _count(name, value, high=MAX_TOKENS):
    return check_number(name, value, high=high, integer=True)


def round_robin(requests: int, instances: int) -> tuple[np.ndarray, ...]:
    """Which requests each instance gets when requests go round-robin (request i to instance
    i mod instances), for the instances that get any: a disaggregated run's and a colocated
    comparison's instances, a pipeline's virtual engines."""
    return tuple(np.arange(i, requests, instances) for i in range(min(instances, requests)))


def make_workload(arrival_s, prompt, output, prefilled=None, name="workload",
                  request_class=None, classes=(), prefix_group=None,
                  prefix_tokens=None) -> Workload:
    """A workload of these rows ordered by arrival (stably). `request_class`: each request's
    class name, or None; `classes` orders the names (by default as they first arrive);
    `prefix_group`, `prefix_tokens`: the prompts' shared starts (`Workload`), or None."""
    arrival = np.asarray(arrival_s, dtype=np.float64)
    order = np.argsort(arrival, kind="stable")
    flags = np.zeros(len(arrival), bool) if prefilled is None else np.asarray(prefilled, bool)
    names, codes = (), None
    if request_class is not None:
        labels = [str(label) for label in np.asarray(request_class, dtype=object)[order]]
        names = tuple(classes) or tuple(dict.fromkeys(labels))
        lookup = {label: i for i, label in enumerate(names)}
        unknown = next((label for label in labels if label not in lookup), None)
        if unknown is not None:
            raise InputError(f"request class {unknown!r} is not one of {', '.join(names)}")
        codes = np.fromiter((lookup[label] for label in labels), np.int64, len(labels))
    groups = shared = None
    if prefix_group is not None:
        groups = np.asarray(prefix_group, np.int64)[order]
        shared = np.asarray(prefix_tokens, np.int64)[order]
    return Workload(arrival[order], np.asarray(prompt, np.int64)[order],
                    np.asarray(output, np.int64)[order], flags[order], name, names, codes,
                    groups, shared)


def conversations(prompt: np.ndarray, output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lab's reading of a length-only trace as conversations: a row whose prompt is at least
    the row before's prompt plus its answer is that conversation's next turn, its prompt
    beginning with all of it. Returns each row's conversation (group) and its tokens shared with
    the conversation (all of its prompt and output: the next turn begins with them). The trace
    holds lengths only, so two rows that merely satisfy the rule are read as one conversation."""
    follows = np.zeros(len(prompt), bool)
    follows[1:] = prompt[1:] >= prompt[:-1] + output[:-1]
    group = np.cumsum(~follows) - 1
    return group.astype(np.int64), (prompt + output).astype(np.int64)


def shared_prefix(rng: np.random.Generator, prompt: np.ndarray, tokens: int,
                  share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A system prompt of `tokens` tokens put before the prompts of a share `share` of the
    requests (each drawn with that chance): (prompts, each request's group, its shared tokens);
    the requests without it are each their own group."""
    tokens = _count("prefix tokens", tokens)
    share = check_number("prefix share", share, low=0, low_inclusive=True, high=1)
    has = rng.random(len(prompt)) < share
    group = np.where(has, 0, np.arange(1, len(prompt) + 1))
    return prompt + np.where(has, tokens, 0), group.astype(np.int64), \
        np.where(has, tokens, 0).astype(np.int64)


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
        lengths, _, prefix = workload.name[len("poisson-"):].partition(PREFIX_NAME)
        if prefix:
            tokens, share = prefix.split("x")
            return (f"Poisson arrivals, {lengths} lengths, a {int(tokens):,}-token shared prefix "
                    f"for {float(share):.0%}")
        if lengths == "sharegpt-trace" and workload.shares_prefixes:
            return "Poisson arrivals, sharegpt-trace lengths (its turns as conversations)"
        return f"Poisson arrivals, {lengths} lengths"
    if workload.name.startswith(MIX_PREFIX):
        return f"Poisson arrivals, mix {workload.name[len(MIX_PREFIX):]}"
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
            prompt_range=None, output_range=None, prefix_tokens=0,
            prefix_share=0.0) -> Workload:
    """`n` requests with exponential inter-arrival gaps at `qps`. Lengths: ``fixed`` (prompt,
    output), ``uniform`` (integers in the inclusive ranges), ``sharegpt`` (lognormals fitted to
    the ShareGPT trace's medians and P90s within its limits, see `sharegpt_like`) or
    ``sharegpt-trace`` (`n` consecutive requests of the trace itself from an offset the seed
    picks, see `sim.serving.length_traces`; its rows read as conversations, `conversations`).
    `prefix_tokens` > 0: a share `prefix_share` of the requests have a system prompt of that many
    tokens before their drawn prompt (`shared_prefix`, drawn from its own generator, so the
    arrivals and lengths stay those of the seed without it)."""
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
    name, group, shared = f"poisson-{lengths}", None, None
    if lengths == "sharegpt-trace":
        group, shared = conversations(p, o)
    if prefix_tokens:
        if group is not None:
            raise InputError("a shared prefix goes before drawn prompts; the ShareGPT trace's "
                             "prompts are its own conversations: pick other lengths, or no "
                             "prefix tokens")
        prefix_rng = np.random.default_rng([int(seed), 1])
        p, group, shared = shared_prefix(prefix_rng, p, prefix_tokens, prefix_share)
        name += f"{PREFIX_NAME}{int(prefix_tokens)}x{float(prefix_share):g}"
    return make_workload(arrival, p, o, name=name, prefix_group=group, prefix_tokens=shared)


# --- mixed traffic: request classes ---------------------------------------------------------
MIX_PREFIX = "mix-"   # a mixed workload's name: mix-chat+documents
TOKENS = re.compile(r"[0-9]{1,9}")   # a count of tokens as a class spec spells it (ASCII digits)


@dataclass(frozen=True)
class Lengths:
    """One class's prompt or output lengths: the ShareGPT-like draws (`sharegpt_like`), or whole
    numbers drawn uniformly from `low` to `high` inclusive (fixed where they are equal)."""
    low: int = 1
    high: int = 1
    sharegpt: bool = False

    def __post_init__(self):
        if not self.sharegpt and not 1 <= self.low <= self.high <= MAX_TOKENS:
            raise InputError(f"lengths {self.low}-{self.high}: need 1 <= low <= high <= "
                             f"{MAX_TOKENS:,} tokens")

    @classmethod
    def parse(cls, text: str, what: str) -> Lengths:
        """`sharegpt`, `N` (fixed) or `LOW-HIGH` (a range), as a class spec spells them."""
        if text == "sharegpt":
            return SHAREGPT
        low, dash, high = text.partition("-")
        if not (TOKENS.fullmatch(low) and (TOKENS.fullmatch(high) or not dash)):
            raise InputError(f"{what} {text!r}: give a number of tokens (8192), a range "
                             "(16384-32768) or sharegpt")
        low_tokens, high_tokens = int(low), int(high or low)
        if not 1 <= low_tokens <= high_tokens <= MAX_TOKENS:
            raise InputError(f"{what} {text!r}: need 1 <= low <= high <= {MAX_TOKENS:,} tokens")
        return cls(low_tokens, high_tokens)

    def words(self) -> str:
        if self.sharegpt:
            return "ShareGPT-like"
        return (f"{self.low:,}" if self.low == self.high else f"{self.low:,}-{self.high:,}") + \
            " tokens"

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.integers(self.low, self.high + 1, count)


SHAREGPT = Lengths(sharegpt=True)


@dataclass(frozen=True)
class RequestClass:
    """A class of requests: its `share` of the drawn (Poisson) requests, or, with `at_s`, one
    request arriving at that time (share 0); its prompt and output lengths."""
    name: str
    share: float
    prompt: Lengths
    output: Lengths
    at_s: float | None = None

    def __post_init__(self):
        check_class_name(self.name)
        if self.at_s is None:
            check_number(f"class {self.name}'s share", self.share, high=1)
        else:
            check_number(f"class {self.name}'s arrival (s)", self.at_s, low=0, low_inclusive=True,
                         high=MAX_ARRIVAL_S)

    def words(self) -> str:
        when = f"one at {self.at_s:g} s" if self.at_s is not None else f"{self.share * 100:g}%"
        return f"{self.name} {when} (prompt {self.prompt.words()}, output {self.output.words()})"


@dataclass(frozen=True)
class Mix:
    """Request classes served together: Poisson arrivals drawn among the classes with a share
    (their shares add up to 1), plus one request of each class pinned to a time (`at_s`)."""
    name: str
    classes: tuple[RequestClass, ...]

    def __post_init__(self):
        names = [c.name for c in self.classes]
        if not 1 <= len(names) <= MAX_CLASSES:
            raise InputError(f"a mix has 1 to {MAX_CLASSES} classes, got {len(names)}")
        if len(set(names)) < len(names):
            raise InputError(f"class names repeat in mix {self.name!r}: {', '.join(names)}; name "
                             "each class once")
        shares = [c.share for c in self.drawn]
        if not shares:
            raise InputError(f"mix {self.name!r} has no class with a share; give one a share "
                             "(chat:1:sharegpt:sharegpt)")
        if not math.isclose(sum(shares), 1.0, abs_tol=1e-6):
            raise InputError(f"the shares of mix {self.name!r} add up to {sum(shares):g}; make "
                             "them add up to 1 (or 100%)")

    @property
    def drawn(self) -> tuple[RequestClass, ...]:
        return tuple(c for c in self.classes if c.at_s is None)

    @property
    def pinned(self) -> tuple[RequestClass, ...]:
        return tuple(c for c in self.classes if c.at_s is not None)

    def words(self) -> str:
        return "; ".join(c.words() for c in self.classes)


MIXES = {m.name: m for m in (
    Mix("chat+documents", (
        RequestClass("chat", 0.95, SHAREGPT, SHAREGPT),
        RequestClass("documents", 0.05, Lengths(16_384, 32_768), Lengths(64, 256)))),
    Mix("chat+one-long", (
        RequestClass("chat", 1.0, SHAREGPT, SHAREGPT),
        RequestClass("long", 0.0, Lengths(100_000, 100_000), Lengths(128, 128), at_s=1.0))),
)}
MIX_SPEC = "NAME:SHARE:PROMPT:OUTPUT[,...]"
MIX_SPEC_WORDS = (
    f"a preset ({', '.join(MIXES)}) or classes {MIX_SPEC}: SHARE a fraction (0.95) or a "
    "percentage (95%) of the drawn requests, or @T for one request arriving at T s; PROMPT and "
    "OUTPUT tokens: N fixed, LOW-HIGH uniform, or sharegpt (the ShareGPT-like lengths); e.g. "
    "chat:95%:sharegpt:sharegpt,docs:5%:16384-32768:64-256")


def _share(text: str, name: str) -> tuple[float, float | None]:
    """(share, at_s) of a class spec's SHARE field."""
    where = f"class {name}'s share {text!r}"
    try:
        if text.startswith("@"):
            return 0.0, float(text[1:])
        return (float(text[:-1]) / 100, None) if text.endswith("%") else (float(text), None)
    except ValueError:
        raise InputError(f"{where}: give a fraction (0.95), a percentage (95%) or @T for one "
                         "request at T seconds (@1)") from None


def parse_mix(text: str) -> Mix:
    """A preset by its name, or the classes of a spec (MIX_SPEC_WORDS)."""
    if text in MIXES:
        return MIXES[text]
    if ":" not in text:
        raise InputError(f"unknown mix {text!r}: choose a preset, "
                         f"{', '.join(repr(name) for name in MIXES)}, or give classes {MIX_SPEC}")
    classes = []
    for part in text.split(","):
        fields = part.strip().split(":")
        if len(fields) != 4:
            raise InputError(f"mix class {part.strip()!r}: expected {MIX_SPEC.split('[')[0]} "
                             f"(4 fields), got {len(fields)}; or a preset: {', '.join(MIXES)}")
        name, share, prompt, output = (f.strip() for f in fields)
        check_class_name(name, "mix class")
        share_value, at_s = _share(share, name)
        classes.append(RequestClass(name, share_value, Lengths.parse(prompt, f"class {name}'s prompt"),
                                    Lengths.parse(output, f"class {name}'s output"), at_s))
    return Mix("+".join(c.name for c in classes), tuple(classes))


def apportion(total: int, shares: list[float]) -> np.ndarray:
    """`total` split by `shares` (adding up to 1) into whole counts, the largest remainders
    rounded up: each count within 1 of its share x total."""
    exact = np.asarray(shares) * total
    counts = np.floor(exact).astype(np.int64)
    short = total - int(counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return counts


def _class_lengths(c: RequestClass, rng: np.random.Generator, count: int):
    pairs = sharegpt_like(rng, count) if (c.prompt.sharegpt or c.output.sharegpt) else None
    prompt = pairs[0] if c.prompt.sharegpt else c.prompt.draw(rng, count)
    output = pairs[1] if c.output.sharegpt else c.output.draw(rng, count)
    return prompt, output


def mixed(n, qps, mix: Mix, *, seed=0) -> Workload:
    """`n` requests of `mix`: one for each pinned class at its time, the rest Poisson arrivals at
    `qps` whose classes are the drawn classes' shares of them (whole counts, `apportion`) in an
    order the seed shuffles, each with its class's lengths. The same seed, the same requests."""
    count = _count("requests", n, MAX_REQUESTS)
    rate = check_number("QPS", qps, high=1e6)
    rng = np.random.default_rng(int(check_number("seed", seed, low=0, low_inclusive=True,
                                                 integer=True, high=2**63)))
    pinned = mix.pinned
    drawn = count - len(pinned)
    if drawn < 1:
        raise InputError(f"mix {mix.name} has {len(pinned)} request(s) at set times and needs at "
                         f"least one drawn request: use at least {len(pinned) + 1} requests")
    arrival = np.cumsum(rng.exponential(1.0 / rate, drawn))
    codes = rng.permutation(np.repeat(np.arange(len(mix.drawn)),
                                      apportion(drawn, [c.share for c in mix.drawn])))
    prompt, output = np.empty(drawn, np.int64), np.empty(drawn, np.int64)
    for code, c in enumerate(mix.drawn):
        mine = codes == code
        prompt[mine], output[mine] = _class_lengths(c, rng, int(mine.sum()))
    labels = list(np.array([c.name for c in mix.drawn], dtype=object)[codes])   # names by code
    for c in pinned:
        p, o = _class_lengths(c, rng, 1)
        arrival, prompt, output = np.r_[arrival, c.at_s], np.r_[prompt, p], np.r_[output, o]
        labels.append(c.name)
    return make_workload(arrival, prompt, output, name=MIX_PREFIX + mix.name,
                         request_class=labels, classes=tuple(c.name for c in mix.classes))
