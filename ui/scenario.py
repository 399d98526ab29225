"""The scenario every page simulates and the workload the traffic pages share, built from the
widget values. Pure Python (no Streamlit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial

from sim.cost.iteration import CostModel
from sim.presets.hardware import Gpu, custom_gpu, get_gpu
from sim.presets.models import Model, custom_model, get_model
from sim.serving.policies import POLICIES
from sim.serving.workloads import Workload, burst, poisson, seed_scenario

from .controls import CONTROLS, CUSTOM
from .words import cost_rule

DECODE_OUTPUT = 256   # tokens each running decoder still emits (sim.serving.workloads.seed_scenario default)


PROMPT_OUTPUT = 32    # tokens the new request emits (sim.serving.workloads.seed_scenario default)


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
        """sim.studies.worked_example inputs from the controls (its units: TFLOP/s, TB/s)."""
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

    def for_capacity(self) -> Traffic:
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


