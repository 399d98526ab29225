"""The app's controls as plain data: their URL keys, defaults and ranges, and the checks a value
arriving in a link gets. Pure Python (no Streamlit), so it is unit-tested on its own.

URL keys are short and stable because links in slides must keep working. Defaults are seed 001's
worked example. A value in a link that is out of range or unreadable is replaced by the nearest
valid value (or the default when there is no nearest) and a note says so: never an exception, never
a silent clamp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, Mapping

import numpy as np

from charts.views import FOCUS_MARGIN, WINDOWS
from sim.capacity import DELAY_SLO_S, SLO_PRESETS
from sim.cost import MODES, CostModel
from sim.engine import Trace
from sim.hardware import GPUS, Gpu, custom_gpu, get_gpu
from sim.metrics import request_times, summarize, token_gaps
from sim.models import MODELS, Model, custom_model, get_model
from sim.policies import CHUNKED, POLICIES, UNCHUNKED
from sim.units import fmt_seconds
from sim.workloads import Workload, burst, poisson, seed_scenario

CUSTOM = "custom"
DECODE_OUTPUT = 256   # tokens each running decoder still emits (sim.workloads.seed_scenario default)
PROMPT_OUTPUT = 32    # tokens the new request emits (sim.workloads.seed_scenario default)


@dataclass(frozen=True)
class Control:
    """One widget: its URL key, label, default and allowed values."""
    key: str
    label: str
    default: object
    kind: str                      # "int", "float", "choice", "bool" or "multi" (several choices)
    low: float = -math.inf
    high: float = math.inf
    options: tuple[str, ...] = ()
    step: float = 1
    help: str = ""

    def parse(self, raw: str | list[str]) -> tuple[object, str | None]:
        """(value, note): the value to use for `raw` from a URL (a list: a key repeated, as a
        multi control's choices are), and a note when it is not `raw`."""
        if self.kind == "multi":
            return self._parse_many(raw if isinstance(raw, list) else [raw])
        raw = raw[-1] if isinstance(raw, list) else raw
        where = f"`{self.key}={raw}` in the link"
        if self.kind == "choice":
            if raw in self.options:
                return raw, None
            return self.default, (f"{where} is not one of {', '.join(self.options)}; "
                                  f"using the default `{self.default}`")
        if self.kind == "bool":
            if raw.lower() in ("true", "false"):
                return raw.lower() == "true", None
            return self.default, f"{where} is not true or false; using `{str(self.default).lower()}`"
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            return self.default, f"{where} is not a number; using the default {self.show(self.default)}"
        if number < self.low:
            return self.clean(self.low), (f"{where} is below the minimum {self.show(self.low)}; "
                                          f"using {self.show(self.low)}")
        if number > self.high:
            return self.clean(self.high), (f"{where} is above the maximum {self.show(self.high)}; "
                                           f"using {self.show(self.high)}")
        value = self.clean(number)
        if self.kind == "int" and value != number:
            return value, f"{where} is not a whole number; using {self.show(value)}"
        return value, None

    def _parse_many(self, raws: list[str]) -> tuple[list[str], str | None]:
        """Known choices are kept (in link order, once each); unknown ones are left out with a
        note. An empty value (`?policies=`) is an empty selection."""
        picked = list(dict.fromkeys(r for r in raws if r in self.options))
        unknown = [r for r in raws if r and r not in self.options]
        if not unknown:
            return picked, None
        return picked, (f"{', '.join(f'`{self.key}={r}`' for r in unknown)} in the link: not one "
                        f"of {', '.join(self.options)}; left out")

    def clean(self, number: float):
        return int(round(number)) if self.kind == "int" else float(number)

    def show(self, value) -> str:
        return f"{value:,.0f}" if self.kind == "int" else f"{value:g}"


def _int(key, label, default, low, high, help="", step=1):
    return Control(key, label, default, "int", low, high, step=step, help=help)


def _float(key, label, default, low, high, help="", step=1.0):
    return Control(key, label, float(default), "float", low, high, step=step, help=help)


def _choice(key, label, default, options, help=""):
    return Control(key, label, default, "choice", options=tuple(options), help=help)


# The scenario: seed 001's worked example.
SCENARIO = (
    _int("prompt", "New prompt (tokens)", 8192, 1, 2_000_000, step=512,
         help="Tokens in the prompt that arrives while the decoders stream."),
    _int("decodes", "Running decodes", 64, 0, 4096, step=8,
         help="Requests already streaming when the prompt arrives; each emits one token per "
              "iteration it is in."),
    _int("context", "Decoders' context (tokens)", 4000, 1, 1_000_000, step=500,
         help="Tokens already in each decoder's KV cache."),
    _int("budget", "Token budget per iteration", 576, 1, 1_000_000, step=64,
         help="vLLM `max_num_batched_tokens`, SGLang `--chunked-prefill-size`: tokens one forward "
              "pass may hold. Chunk = budget - decodes."),
)
HARDWARE = (
    _choice("gpu", "GPU", "illustrative", (*GPUS, CUSTOM),
            help="Dense BF16 tensor-core peaks, no sparsity (sparse figures are 2x)."),
    _choice("model", "Model", "dense-8b", (*MODELS, CUSTOM)),
    _choice("mode", "Cost mode", "simple", MODES,
            help="simple: the seeds' arithmetic (FLOPs = 2 x params x tokens; bytes = weights), so the "
                 "defaults reproduce seed 001. roofline: adds attention FLOPs, KV and activation "
                 "bytes and the LM head. calibrated: the roofline's work at what real kernels "
                 "achieve (fitted on measured A100 GEMMs; `python -m sim validate`)."),
    _int("tp", "Tensor-parallel GPUs (tp)", 1, 1, 64,
         help="The model sharded over this many GPUs: each holds 1/tp of the weights, FLOPs and KV "
              "heads (and 1/tp of the KV cache), and every layer adds two all-reduces over the "
              "GPU-to-GPU link. It must divide the model's attention heads."),
)
POLICY = (
    _choice("unchunked", "Unchunked baseline", "vllm-v0", UNCHUNKED,
            help="vllm-v0: prefill-only iterations (decodes pause). orca: decodes + whole prompts."),
    _choice("chunked", "Chunked policy", "sarathi", CHUNKED,
            help="sarathi: decodes first, chunk fills the budget. vllm-v1: the budget caps decodes "
                 "too. sglang: prefill-first, decodes wait."),
)
CUSTOM_GPU = (
    _float("peak", "Peak dense TFLOP/s", 400, 1, 100_000, step=10.0),
    _float("bw", "Memory bandwidth (TB/s)", 3.0, 0.01, 1000, step=0.1),
    _float("mem", "Memory (GB)", 80, 1, 100_000, step=8.0),
    _float("link", "GPU-to-GPU link (GB/s, one way)", 0, 0, 100_000, step=50.0,
           help="What a ring all-reduce streams through per GPU, for tp > 1 (0: no link). NVLink 4 "
                "on H100 SXM: 450 GB/s each way (its datasheet's 900 GB/s counts both)."),
)
# Custom model fields default to Llama-3.1-8B's config.json (sim.models.LLAMA3_8B_LAYOUT).
CUSTOM_MODEL = (
    _int("layers", "Layers", 32, 1, 1000),
    _int("hidden", "Hidden size", 4096, 64, 1_000_000, step=256),
    _int("heads", "Attention heads", 32, 1, 4096),
    _int("kvheads", "KV heads", 8, 1, 4096),
    _int("headdim", "Head dim", 128, 1, 4096),
    _int("ffn", "MLP intermediate size", 14336, 1, 10_000_000, step=256),
    _int("vocab", "Vocabulary", 128256, 1, 10_000_000, step=1000),
)
DISPLAY = (
    Control("presenter", "Presenter mode (large fonts)", False, "bool",
            help="Larger fonts in the app and the charts, for a projector."),
)
# Controls that live on one page only.
TPOT = _float("tpot", "TPOT target (ms)", 25, 0.01, 100_000, step=1.0,
              help="The inter-token latency the decoders must keep; the Sarathi-Serve recipe picks the "
                   "largest budget whose iteration meets it.")
BUDGET2 = _int("budget2", "Second budget to compare (tokens)", 2048, 1, 1_000_000, step=64,
               help="Seed 001 compares 576 with 2,048.")
COMPARE = Control("compare", "Show ideal and calibrated side by side", False, "bool",
                  help="Adds the other cost mode's numbers beside the chosen mode's: calibrated "
                       "beside simple or roofline, the ideal roofline beside calibrated.")
WHY = _choice("why", "Iteration to explain", "fused", ("decode", "chunk", "fused", "prompt"),
              help="One of the scenario's iterations, as on the Roofline page. decode: the "
                   "decodes alone; chunk: the prompt's first chunk alone; fused: the decodes and "
                   "that chunk; prompt: the whole prompt in one pass.")
WINDOW = _choice("window", "Time axis", "prompt", tuple(WINDOWS),
                 help=". ".join(f"{name}: {what}".replace("FOCUS_MARGIN", f"{FOCUS_MARGIN:g}")
                                for name, what in WINDOWS.items())
                 + ". The metrics always cover the whole run.")
PACE = _float("pace", "Playback pace (simulated ms per second at 1x)", 100, 1, 100_000, step=10.0,
               help="The player's 0.25x-4x speeds are multiples of this.")

# The traffic pages (Traffic, Budget trade-off, Capacity, Memory) share one workload.
MAX_REQUESTS = 1000   # a page runs its workload once per policy, budget or rate: keep each run short
TRAFFIC = (
    _choice("workload", "Workload", "burst", ("burst", "poisson", "upload"),
            help="burst: N prompts of the sidebar's prompt length arrive at once while the "
                 "sidebar's decoders stream (seed 001's drain). poisson: requests at random times "
                 "at a mean rate. upload: a CSV trace with columns arrival_s, prompt_tokens, "
                 "output_tokens."),
    _int("burst", "Prompts in the burst", 10, 1, 1000,
         help="Seed 001: ten 8,192-token prompts arriving together."),
    _int("requests", "Requests", 200, 1, MAX_REQUESTS, step=50),
    _float("qps", "Arrival rate (requests/s)", 4, 0.01, 1000, step=0.5,
           help="Poisson arrivals: the gaps between requests are exponential with mean 1 / rate."),
    _choice("lengths", "Lengths", "sharegpt", ("sharegpt", "fixed", "uniform"),
            help="sharegpt: lognormals fitted to ShareGPT's medians and P90s as Sarathi-Serve used "
                 "it (prompt 1,730 / 5,696, output 415 / 834 tokens; prompt + output <= 8,192). "
                 "fixed: every request the same. uniform: whole numbers from 1 to the lengths "
                 "below."),
    _int("plen", "Prompt tokens", 1024, 1, 131_072, step=256,
         help="fixed: every prompt; uniform: the longest. Not used by sharegpt."),
    _int("olen", "Output tokens", 128, 1, 32_768, step=32,
         help="fixed: every output; uniform: the longest. Not used by sharegpt."),
    _int("seed", "Random seed", 0, 0, 2**31 - 1, help="The same seed draws the same requests."),
)
PICK = Control("policies", "Policies", ("vllm-v0", "sarathi"), "multi", options=tuple(POLICIES),
               help="Two or more, served the same workload at the sidebar's budget. "
                    + "; ".join(f"{name}: {p.label}" for name, p in POLICIES.items()) + ".")
BUDGET_RANGE = (
    _int("bmin", "Smallest budget", 128, 1, 10_000_000, step=64),
    _int("bmax", "Largest budget", 16384, 1, 10_000_000, step=1024),
)
TTFT = _float("ttft", "TTFT target (s)", 2, 0.001, 100_000, step=0.5,
              help="Time to first token you must meet (a p50 line on the frontier).")
SLO = _choice("slo", "SLO preset", "mistral-7b-strict", (*SLO_PRESETS, CUSTOM),
              help="Sarathi-Serve's P99 TBT SLOs: strict = 5x and relaxed = 25x a decode "
                   "iteration of batch 32 at 4k context. custom: your own, below.")
TBT_SLO = _float("tbtslo", "P99 TBT SLO (ms)", 100, 0.01, 100_000, step=10.0)
DELAY_SLO = _float("delay", "Median scheduling delay SLO (s)", DELAY_SLO_S, 0.001, 100_000,
                   step=0.5, help="Sarathi-Serve: 2 s. Past capacity the queue grows without "
                                  "bound and the median delay catches it.")
KV_PICK = Control("kvpolicies", "Policies", ("sarathi", "vllm-v1"), "multi",
                  options=tuple(POLICIES),
                  help="Sarathi-Serve and SGLang reserve a prompt's KV at admission; vLLM V1 "
                       "allocates it chunk by chunk.")
PARTIALS = _int("partials", "Max partial prefills (0: no cap)", 0, 0, 1024,
                help="Chunked policies: requests mid-prefill at once (vLLM "
                     "max_num_partial_prefills). 0 leaves it uncapped.")
TOGETHER = _int("together", "Prompts held at once", 20, 0, 100_000,
                help="Seed 001: 20 simultaneous 8,192-token prompts.")

CONTROLS: dict[str, Control] = {c.key: c for c in (
    *SCENARIO, *HARDWARE, *POLICY, *CUSTOM_GPU, *CUSTOM_MODEL, *DISPLAY, TPOT, BUDGET2, COMPARE, WHY,
    WINDOW, PACE, *TRAFFIC, PICK, *BUDGET_RANGE, TTFT, SLO, TBT_SLO, DELAY_SLO, KV_PICK, PARTIALS,
    TOGETHER)}


def from_query(params: Mapping[str, str | list[str]]) -> tuple[dict[str, object], list[str]]:
    """The corrections a link needs: {key: value to use instead} and one note per correction.
    A key's value is a string or the list of its repeated values. Keys that are not controls are
    ignored; valid values need no correction."""
    corrections, notes = {}, []
    for key, raw in params.items():
        control = CONTROLS.get(key)
        if control is None:
            continue
        value, note = control.parse(raw if isinstance(raw, list) else str(raw))
        if note:
            corrections[key] = value
            notes.append(note)
    return corrections, notes


@dataclass(frozen=True)
class Scenario:
    """Everything a page needs to simulate and explain, built from the widget values."""
    prompt: int
    decodes: int
    context: int
    budget: int
    gpu: Gpu
    model: Model
    mode: str
    unchunked: str
    chunked: str
    tp: int = 1

    @property
    def chunk(self) -> int:
        """Prefill tokens an iteration can take beside every decode (<= 0: the prompt starves)."""
        return self.budget - self.decodes

    @property
    def starves(self) -> bool:
        return self.chunk <= 0

    @property
    def max_seqs(self) -> int:
        """Room for every decoder plus the new prompt, so max_num_seqs never queues it."""
        return self.decodes + 1

    def cost_model(self) -> CostModel:
        return CostModel(self.gpu, self.model, self.mode, tp=self.tp)

    @property
    def compare_mode(self) -> str:
        """The mode whose numbers the compare toggle adds: calibrated beside an ideal mode, the
        ideal roofline beside calibrated."""
        return "roofline" if self.mode == "calibrated" else "calibrated"

    def in_mode(self, mode: str) -> Scenario:
        return replace(self, mode=mode)

    @property
    def cost_rule(self) -> str:
        return cost_rule(self.mode, self.tp)

    def workload(self) -> Workload:
        return seed_scenario(self.decodes, self.context, self.prompt, DECODE_OUTPUT, PROMPT_OUTPUT)

    def policy_label(self, name: str) -> str:
        return POLICIES[name].label

    def worked_example_inputs(self, second_budget: int) -> dict:
        """sim.worked_example inputs from the controls (its units: TFLOP/s, TB/s)."""
        m = self.model
        return dict(params=m.params, bytes_per_param=m.weight_bytes_per_param,
                    peak_tflops=self.gpu.peak_flops / 1e12, bandwidth_tbps=self.gpu.bandwidth / 1e12,
                    decodes=self.decodes, context=self.context, prompt=self.prompt,
                    budgets=(self.budget, second_budget), layers=m.layers, kv_heads=m.kv_heads,
                    head_dim=m.head_dim, kv_bytes=m.kv_bytes_per_element)


def scenario_from(values: Mapping[str, object]) -> Scenario:
    """A Scenario from widget values (missing keys take their defaults). Raises sim's InputError
    for a custom GPU or model that cannot exist (e.g. heads not a multiple of KV heads), or a cost
    model that cannot be built (a tp the model's heads do not allow, the calibrated mode on the
    illustrative GPU)."""
    def get(key):
        return values.get(key, CONTROLS[key].default)

    gpu = custom_gpu(get("peak"), get("bw"), get("mem"), link_gbps=get("link")) \
        if get("gpu") == CUSTOM else get_gpu(get("gpu"))
    model = custom_model(layers=get("layers"), hidden=get("hidden"), heads=get("heads"),
                         kv_heads=get("kvheads"), head_dim=get("headdim"),
                         intermediate=get("ffn"), vocab=get("vocab")) \
        if get("model") == CUSTOM else get_model(get("model"))
    s = Scenario(int(get("prompt")), int(get("decodes")), int(get("context")),
                 int(get("budget")), gpu, model, str(get("mode")), str(get("unchunked")),
                 str(get("chunked")), int(get("tp")))
    s.cost_model()   # its checks, so that every page shows the same message
    return s


@dataclass(frozen=True)
class Traffic:
    """The traffic pages' workload, from the controls: a burst on the sidebar's scenario, Poisson
    arrivals, or an uploaded trace (known by its digest; the bytes stay with the upload)."""
    kind: str
    burst: int
    requests: int
    qps: float
    lengths: str
    prompt_tokens: int
    output_tokens: int
    seed: int
    prompt: int           # the sidebar scenario: each burst prompt's length,
    decodes: int          # the decoders streaming while it drains,
    context: int          # and their cached context
    trace: str | None = None

    @property
    def max_seqs(self) -> int:
        """vLLM serve's max_num_seqs of 1,024 (shared/reference/schedulers.md), or room for every
        decoder and every burst prompt if that is more, so only the budget and KV limit them."""
        return max(1024, self.decodes + self.burst) if self.kind == "burst" else 1024

    def for_capacity(self) -> "Traffic":
        """Only what a capacity search reads (the Poisson count, lengths and seed; it sets the
        rate itself), so the other controls do not invalidate its cached result."""
        return Traffic("poisson", 0, self.requests, 0.0, self.lengths, self.prompt_tokens,
                       self.output_tokens, self.seed, 0, 0, 0)

    def poisson_at(self) -> Callable[[float], Workload]:
        """The Poisson workload as a function of its rate (the capacity search varies it)."""
        return partial(poisson, self.requests, seed=self.seed, lengths=self.lengths,
                       prompt=self.prompt_tokens, output=self.output_tokens)

    def workload(self) -> Workload:
        """The burst or Poisson workload (an uploaded trace is loaded by the page from its bytes)."""
        if self.kind == "burst":
            return burst(self.burst, self.prompt, PROMPT_OUTPUT, self.decodes, self.context,
                         DECODE_OUTPUT)
        if self.kind == "poisson":
            return self.poisson_at()(self.qps)
        raise ValueError("an uploaded trace has no generator")

    def poisson_words(self) -> str:
        lengths = {"sharegpt": "ShareGPT-like lengths (prompt median 1,730, output median 415 "
                               "tokens)",
                   "fixed": f"{self.prompt_tokens:,}-token prompts and {self.output_tokens:,}-token "
                            "outputs",
                   "uniform": f"prompts of 1 to {self.prompt_tokens:,} and outputs of 1 to "
                              f"{self.output_tokens:,} tokens, uniformly"}[self.lengths]
        return f"{self.requests:,} Poisson arrivals, {lengths}, seed {self.seed}"

    def words(self) -> str:
        """The workload in a sentence, for captions."""
        if self.kind == "burst":
            return (f"{self.burst:,} prompts of {self.prompt:,} tokens arrive together (each emits "
                    f"{PROMPT_OUTPUT} tokens) while {self.decodes:,} decoders stream "
                    f"({self.context:,} tokens of context, {DECODE_OUTPUT} tokens still to emit)")
        if self.kind == "poisson":
            return f"{self.poisson_words()}, at {self.qps:g} requests/s"
        return "the uploaded trace"


def traffic_from(values: Mapping[str, object], trace: str | None = None) -> Traffic:
    """The Traffic from widget values (missing keys take their defaults); `trace`: the digest of
    an uploaded trace, when the workload is `upload`."""
    def get(key):
        return values.get(key, CONTROLS[key].default)

    return Traffic(str(get("workload")), int(get("burst")), int(get("requests")),
                   float(get("qps")), str(get("lengths")), int(get("plen")), int(get("olen")),
                   int(get("seed")), int(get("prompt")), int(get("decodes")), int(get("context")),
                   trace)


# How one iteration is priced, per cost mode (sim/cost.py), in the words the pages use.
COST_RULES = {
    "simple": "max(FLOPs / peak, weight bytes / bandwidth), FLOPs = 2 × params × tokens",
    "roofline": "max(FLOPs / peak, bytes / bandwidth), counting attention, KV and activations",
    "calibrated": "the roofline's FLOPs and bytes at achievable kernel throughput, kernel by kernel "
                  "(`python -m sim cost --mode calibrated` lists each factor)",
}


def cost_rule(mode: str, tp: int = 1) -> str:
    """How one iteration is priced, with the all-reduces tensor parallelism adds."""
    return COST_RULES[mode] + (f", per GPU, plus two all-reduces per layer over the {tp} GPUs"
                               if tp > 1 else "")


# --- what the metric cards say ------------------------------------------------------------------
@dataclass(frozen=True)
class Card:
    label: str
    value: str
    help: str          # the formula, with this run's numbers substituted (Markdown)
    seconds: float     # the raw value, for deltas between lanes (NaN when undefined)
    unit: str = "s"    # what `seconds` counts: "s", or "iterations"


def stall_story(trace: Trace, gap: Card) -> str:
    """Home's "the stall" paragraph, from the unchunked run: its longest iteration and the gap it
    leaves (an iteration with no decode rows adds the decode step after it)."""
    policy = POLICIES[trace.policy]
    i = int(np.argmax(trace.duration_s))
    tokens = int(trace.decode_tokens[i] + trace.prefill_tokens[i])
    if math.isnan(gap.seconds):
        why = "no decoders are running, so no stream stalls"
    elif trace.decode_tokens[i] == 0:
        why = ("the decoders get no token in it, so their largest gap is that iteration plus the "
               f"decode step after it: **{gap.value}**")
    else:
        why = f"every decoder's token waits for it: **{gap.value}**"
    return (f"**{policy.label}**: {policy.summary}. Its longest iteration ({tokens:,} tokens) takes "
            f"**{fmt_seconds(float(trace.duration_s[i]))}**; {why}.")


def fix_story(trace: Trace, budget: int, ttft: Card, ttft_before: Card, gap: Card,
              gap_before: Card) -> str:
    """Home's "the fix" paragraph, from the chunked run: what the policy does, the chunk
    arithmetic when an iteration holds decodes and a chunk filling the budget, and what changed."""
    policy = POLICIES[trace.policy]
    if trace.starved_iterations:
        return (f"**{policy.label}**: {policy.summary}. But the running decodes take the whole "
                f"budget of {budget:,} tokens, so the prompt gets no chunk until decoders finish "
                f"and leave ({trace.starved_iterations:,} iterations): its first token comes after "
                f"**{ttft.value}**. Raise the budget above the number of decodes.")
    mixed = np.flatnonzero((trace.decode_tokens > 0) & (trace.prefill_tokens > 0)
                           & (trace.decode_tokens + trace.prefill_tokens == budget))
    chunk = ""
    if len(mixed):
        d, c = int(trace.decode_tokens[mixed[0]]), int(trace.prefill_tokens[mixed[0]])
        chunk = f" (chunk = budget − decodes = {budget:,} − {d:,} = **{c:,} prompt tokens**)"
    if math.isnan(gap.seconds):
        streams = "no decoders are running"
    else:
        direction = "falls" if gap.seconds < gap_before.seconds else "rises"
        streams = f"the decoders' largest gap {direction} to **{gap.value}** (from {gap_before.value})"
    return (f"**{policy.label}**: {policy.summary}{chunk}. Its longest iteration takes "
            f"**{fmt_seconds(float(trace.duration_s.max()))}**; {streams}, and the new request's "
            f"first token comes after **{ttft.value}** instead of {ttft_before.value}.")


def card_delta(card: Card, ref: Card, ratio: bool = True) -> str | None:
    """card − ref, with the ratio card / ref − 1 unless `ratio` is False, e.g. "+84 ms (+26%)";
    None when they are equal or either is undefined."""
    d = card.seconds - ref.seconds
    if not d or math.isnan(d):
        return None
    size = fmt_seconds(abs(d)) if card.unit == "s" else f"{abs(d):,.0f} {card.unit}"
    share = f" ({card.seconds / ref.seconds - 1:+.0%})" if ratio and ref.seconds else ""
    return f"{'+' if d > 0 else '-'}{size}{share}"   # st.metric reads the ASCII sign


def _seconds(s: float) -> str:
    return "0 ms" if s == 0 else fmt_seconds(s)


def lane_cards(trace: Trace, mode: str, tp: int = 1) -> list[Card]:
    """The four numbers under a lane: new request TTFT, the decoders' largest gap, p99
    inter-token latency and iterations, each with how it is computed (`mode`: the cost mode,
    `tp`: the tensor-parallel degree)."""
    rule = cost_rule(mode, tp)
    metrics = summarize(trace)
    times = request_times(trace)
    gaps, owner = token_gaps(trace)
    new = np.flatnonzero(~trace.prefilled)
    decoders = np.flatnonzero(trace.prefilled)
    cards = []
    if len(new):
        r = int(new[0])
        first = trace.tokens_of(r)[0] if len(trace.tokens_of(r)) else math.nan
        ttft = float(times.ttft_s[r])
        n_prefill = int(np.count_nonzero(trace.chunk_request == r))
        cards.append(Card(
            "New request TTFT", fmt_seconds(ttft),
            f"TTFT = first token − arrival = {fmt_seconds(first)} − "
            f"{_seconds(trace.arrival_s[r])} = **{fmt_seconds(ttft)}**: the wait before its "
            f"first chunk ({_seconds(times.queue_s[r])}) plus the {n_prefill:,} iteration(s) "
            f"that carried its prompt, each priced {rule}.", ttft))
    gap = float(np.nanmax(times.max_gap_s[decoders])) if len(decoders) else math.nan
    cards.append(Card(
        "Largest decoder gap", fmt_seconds(gap),
        f"max over the {len(decoders):,} running decoders of (time of token k+1 − time of token k)"
        f" = **{fmt_seconds(gap)}**. A decoder waits for every iteration it is not in, and for the "
        "whole of each one it is in: one long prefill iteration is one long gap.", gap))
    cards.append(Card(
        "p99 inter-token latency", fmt_seconds(metrics.tbt_s.p99),
        f"99th percentile (linear interpolation) of all {len(gaps):,} gaps between successive "
        f"tokens of any request = **{fmt_seconds(metrics.tbt_s.p99)}** (median "
        f"{fmt_seconds(metrics.tbt_s.p50)}, max {fmt_seconds(metrics.tbt_s.max)})."
        + (f" The largest gap is {metrics.tbt_s.max / metrics.tbt_s.p99:,.3g}× the p99: a stall that "
           "hits each stream once is a small share of its gaps, so percentiles hide it."
           if metrics.tbt_s.max > 2 * metrics.tbt_s.p99 else ""),
        metrics.tbt_s.p99))
    cards.append(Card(
        "Iterations", f"{trace.iterations:,}",
        f"forward passes until every request finished: {trace.iterations:,}, over "
        f"{fmt_seconds(metrics.makespan_s)}. Each one is priced {rule}.", float(trace.iterations),
        "iterations"))
    return cards
