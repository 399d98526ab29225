"""The scenario every page simulates and the workload the traffic pages share, built from the
widget values. Pure Python (no Streamlit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from charts import export
from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.knobs import LIMIT_KNOBS
from sim.presets.hardware import Gpu, custom_gpu, get_gpu
from sim.presets.models import Model, custom_model, get_model
from sim.serving.engine import SimulationLimitError, Trace
from sim.serving.policies import (
    POLICIES,
    Limits,
    engine_max_seqs,
    get_policy,
    lane_budget,
    names_in_prose,
)
from sim.serving.run import Run
from sim.serving.workloads import TEXTBOOK, Workload, burst, poisson, textbook_scenario

from .controls import CONTROLS, CUSTOM, CUSTOM_GPU, CUSTOM_MODEL

# How one iteration is priced, per cost mode (sim/cost/iteration.py), in the words the pages use.
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


# the textbook scenario's outputs, which the app does not offer as controls
DECODE_OUTPUT = TEXTBOOK.decode_output   # tokens each running decoder still emits
PROMPT_OUTPUT = TEXTBOOK.prompt_output   # tokens the new request emits


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

    @property
    def limits(self) -> Limits:
        """The lanes' Limits (a caller sets the iteration cap)."""
        return Limits(max_seqs=self.max_seqs)

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
        return textbook_scenario(self.decodes, self.context, self.prompt, DECODE_OUTPUT, PROMPT_OUTPUT)

    def lane(self, policy: str) -> Run:
        """One lane: the textbook workload under `policy`, with room for every request, at the
        scenario's budget (vLLM V0 at its own: `lane_budget`)."""
        spec, workload = get_policy(policy), self.workload()
        return Run(workload=workload, policy=spec, cost=self.cost_model(),
                   budget=lane_budget(spec, workload, self.budget), limits=self.limits)

    def run(self, policy: str, max_iterations: int) -> Trace:
        """That lane run, stopped after `max_iterations` iterations."""
        return self.lane(policy).capped(max_iterations).simulate()

    def fits_in_memory(self) -> bool:
        """Whether both lanes can start: the engine checks that the decoders' KV and the prompt's
        fit beside the weights before its first iteration, so a one-iteration run asks exactly
        that (running past one iteration is the answer yes)."""
        for policy in (self.unchunked, self.chunked):
            try:
                self.run(policy, max_iterations=1)
            except SimulationLimitError:
                continue
            except InputError:
                return False
        return True

    def policy_label(self, name: str) -> str:
        return POLICIES[name].label

    def worked_example_inputs(self, second_budget: int) -> dict:
        """sim.studies.worked_example inputs from the controls (its units: TFLOP/s, TB/s)."""
        m = self.model
        moe = m.experts_per_token < m.experts
        return dict(params=m.params, active_params=m.active_params if moe else None,
                    bytes_per_param=m.weight_bytes_per_param,
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


# Controls an export's name spells in its own words (export.Scenario's fields, the theme) or
# that pick no figure (the tour's step); every other control that differs from its default joins
# the name, and a custom GPU's or model's sizes when it is chosen.
NAMED_IN_EXPORTS = {"prompt", "decodes", "context", "budget", "gpu", "model", "mode", "tp",
                    "unchunked", "chunked", "presenter", "contrast", "tour"}


def exported(values: Mapping[str, object]) -> export.Scenario:
    """What a figure drawn from these widget values shows, for its caption and its file name
    (export.Scenario.file_stem): every control that can change a figure is in it."""
    s = scenario_from(values)

    def get(key):   # a multi control's choices as a tuple, as its default spells them
        value = values.get(key, CONTROLS[key].default)
        return tuple(value) if isinstance(value, list) else value

    sizes = {c.key for c in (*CUSTOM_GPU, *CUSTOM_MODEL)}
    chosen = ({c.key for c in CUSTOM_GPU} if get("gpu") == CUSTOM else set()) \
        | ({c.key for c in CUSTOM_MODEL} if get("model") == CUSTOM else set())
    more = tuple((key, get(key)) for key in CONTROLS if key in chosen or (
        key not in NAMED_IN_EXPORTS | sizes and get(key) != CONTROLS[key].default))
    return export.Scenario(s.gpu.id, s.gpu.name, s.model.id, s.model.name, s.prompt, s.decodes,
                           s.budget, s.mode, s.tp, context=s.context,
                           policies=(s.unchunked, s.chunked), more=more)


# The scenario's counts that the GPU's KV memory bounds, in the order a clamp fits them: the
# decoders first, then the prompt in what they leave.
MEMORY_KEYS = ("decodes", "context", "prompt")


def fit_in_memory(values: Mapping[str, object], keys: Sequence[str]) -> dict[str, int]:
    """Lower each of `keys` (some of MEMORY_KEYS, e.g. those a link set above their maximum and
    that were clamped to it) to the largest value with which the scenario fits in the GPU's
    memory: {key: lowered value} for those that had to go down. So a clamp never makes a page
    that cannot run. The keys are fitted in MEMORY_KEYS order, each from the others' minimum;
    one that does not fit even at its minimum (other values too large, or a scenario that cannot
    be built) keeps its value, and the page says why it cannot run."""
    keys = [k for k in MEMORY_KEYS if k in keys]
    trial = {**values, **{k: int(CONTROLS[k].low) for k in keys}}
    lowered = {}
    for key in keys:
        fitted = _largest_that_fits(trial, key, int(values[key]))
        trial[key] = values[key] if fitted is None else fitted
        if fitted is not None and fitted < values[key]:
            lowered[key] = fitted
    return lowered


def most_that_fit(values: Mapping[str, object]) -> dict[str, int]:
    """For a scenario that does not fit in the GPU's memory: each of MEMORY_KEYS lowered alone,
    the others kept, to the largest value that fits ({key: value}; a key that cannot make it fit
    even at its minimum is left out). What a page offers instead of a bare refusal."""
    full = {key: values.get(key, CONTROLS[key].default) for key in CONTROLS}
    out = {}
    for key in MEMORY_KEYS:
        fitted = _largest_that_fits(full, key, int(full[key]))
        if fitted is not None and fitted < int(full[key]):
            out[key] = fitted
    return out


def _largest_that_fits(values: Mapping[str, object], key: str, most: int) -> int | None:
    """The largest value of `key` in [its minimum, most] with which the scenario fits (memory
    use grows with each of MEMORY_KEYS, so bisect); None when not even the minimum fits."""
    def fits(value: int) -> bool:
        try:
            return scenario_from({**values, key: value}).fits_in_memory()
        except InputError:
            return False

    low, high = int(CONTROLS[key].low), most
    if not fits(low):
        return None
    while low < high:            # fits(low) holds
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


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
    decodes: int          # the streams running while it drains,
    context: int          # and their cached context
    trace: str | None = None

    def max_seqs(self, policy: str, s: Scenario) -> int:
        """`policy`'s engine's own max running requests on the scenario's GPU and model (its
        profile, sim/serving/engines.py: vLLM's max_num_seqs, Sarathi-Serve's and Orca's batch
        size), or for a burst room for every stream and every burst prompt if that is more, so
        only the budget and KV limit them."""
        own = engine_max_seqs(get_policy(policy), s.cost_model(), s.budget)
        return max(own, self.burst_seats) if self.kind == "burst" else own

    @property
    def burst_seats(self) -> int:
        """Every stream and every burst prompt at once."""
        return self.decodes + self.burst

    def limits(self, policy: str, s: Scenario, knobs: Mapping[str, object] | None = None) -> Limits:
        """`policy`'s runs' Limits: its max_seqs (above), with the limit knobs among the widget
        values `knobs` (`limits_with`); a caller sets the iteration cap."""
        return limits_with(Limits(max_seqs=self.max_seqs(policy, s)), knobs or {})

    def seats_words(self, policies: Sequence[str], s: Scenario) -> str:
        """Each policy's max running requests in words, for captions: "at most 128 requests
        running at once for Sarathi-Serve, 16 for Orca (...)"."""
        seats = {p: self.max_seqs(p, s) for p in policies}
        each = ", ".join(f"{n:,}{' requests running at once' if i == 0 else ''} for "
                         f"{POLICIES[p].engine}" for i, (p, n) in enumerate(seats.items()))
        raised = [p for p in policies
                  if seats[p] > engine_max_seqs(POLICIES[p], s.cost_model(), s.budget)]
        why = (f"; raised for {names_in_prose([POLICIES[p].engine for p in raised])} to "
               f"{self.decodes:,} stream{'s' if self.decodes != 1 else ''} + {self.burst:,} "
               f"burst prompt{'s' if self.burst != 1 else ''} = {self.burst_seats:,}, so all run "
               "at once and only the budget and KV limit them" if raised else "")
        whose = "each engine's" if len(seats) > 1 else "the engine's"
        return (f"at most {each} ({whose} own max running "
                f"requests on this GPU for this model{why})")

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
                   "sharegpt-trace": "the ShareGPT trace's own lengths (consecutive requests "
                                     "from a row the seed picks)",
                   "fixed": f"{self.prompt_tokens:,}-token prompts and {self.output_tokens:,}-token "
                            "outputs",
                   "uniform": f"prompts of 1 to {self.prompt_tokens:,} and outputs of 1 to "
                              f"{self.output_tokens:,} tokens, uniformly"}[self.lengths]
        return f"{self.requests:,} Poisson arrivals, {lengths}, seed {self.seed}"

    def words(self) -> str:
        """The workload in a sentence, for captions."""
        if self.kind == "burst":
            return (f"{self.burst:,} prompts of {self.prompt:,} tokens arrive together (each emits "
                    f"{PROMPT_OUTPUT} tokens) while {self.decodes:,} "
                    f"{'stream runs' if self.decodes == 1 else 'streams run'} "
                    f"({self.context:,} tokens of context, {DECODE_OUTPUT} tokens still to emit)")
        if self.kind == "poisson":
            return f"{self.poisson_words()}, at {self.qps:g} requests/s"
        return "the uploaded trace"


def limits_with(limits: Limits, values: Mapping[str, object]) -> Limits:
    """`limits` with every limit knob (sim/knobs.py) whose control is in `values` set from it; a
    control's 0 is "no cap" where the engine's default is none (max partial prefills)."""
    changes = {knob.name: None if knob.default is None and not values[knob.key] else
               values[knob.key] for knob in LIMIT_KNOBS if knob.key in values}
    return replace(limits, **changes)


def traffic_from(values: Mapping[str, object], trace: str | None = None) -> Traffic:
    """The Traffic from widget values (missing keys take their defaults); `trace`: the digest of
    an uploaded trace, when the workload is `upload`."""
    def get(key):
        return values.get(key, CONTROLS[key].default)

    return Traffic(str(get("workload")), int(get("burst")), int(get("requests")),
                   float(get("qps")), str(get("lengths")), int(get("plen")), int(get("olen")),
                   int(get("seed")), int(get("prompt")), int(get("decodes")), int(get("context")),
                   trace)


