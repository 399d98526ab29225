"""The cost of one iteration (one batched forward pass), from a roofline.

Combining rule, stated once and used everywhere:

    GPU time = max(total FLOPs / peak FLOP/s, total bytes / memory bandwidth)
    time = GPU time + CPU overhead (a synchronous engine) or max(GPU time, CPU overhead) (an
           engine that overlaps its scheduling with the GPU step; `sim/cost/overhead.py`)

The whole iteration is one pass, so weights are read once and shared by every row in it: a decode
row adds its FLOPs but almost no bytes. That sharing is why decodes ride on a prefill chunk almost
for free, and why a decode-only pass is memory-bound.

Modes:
- ``simple``: exactly the source articles' arithmetic: FLOPs = 2 x params x tokens, bytes = weight bytes.
- ``roofline`` (default): the full count by component:
  ``linear``   the weight GEMMs of every layer (QKV, O, MLP): 2 x active params x tokens FLOPs;
               weight bytes once, plus each GEMM's input and output activations;
  ``attention`` QK^T and PV over each row's context (causal inside a chunk): 4 x q_dim FLOPs per
               (query, key) pair per layer; KV bytes read for the cached context, written for the
               new tokens, plus Q and O;
  ``lm_head``  the vocabulary projection for rows that emit a token (decodes, a prompt's last chunk);
  ``overhead`` the engine's CPU time per iteration (0 unless set).
- ``calibrated``: the roofline's work priced on achievable throughput, kernel by kernel (tiles,
  efficiencies, a soft ridge, kernel floors), plus the engine's measured CPU overhead: see
  `sim/cost/calibration.py` and `sim/cost/overhead.py`.

Tensor parallelism over N GPUs (``tp``): each GPU holds 1/N of the weights and of the query heads
(KV heads too, or one each when N exceeds them), so FLOPs and weight bytes are per GPU; every layer
adds two ring all-reduces of the tokens' activations (after attention and after the MLP):
2(N-1)/N x bytes / link bandwidth each. GPU time = max(...) + all-reduce.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from sim.cost.calibration import Factor, calibration_for, explain
from sim.cost.overhead import VLLM_V0, Overhead
from sim.errors import InputError, check_number
from sim.presets.hardware import Gpu
from sim.presets.models import Model

MODES = ("simple", "roofline", "calibrated")
# each mode as a reader is shown it (a link and the command line spell its key)
MODE_NAMES = {"simple": "Simple arithmetic", "roofline": "Roofline",
              "calibrated": "Calibrated to kernels"}
ACTIVATION_BYTES = 2.0   # bf16 activations
COMPONENTS = ("linear", "attention", "lm_head")


@dataclass(frozen=True)
class Chunk:
    """A prefill row: `length` new prompt tokens on top of `prefix` tokens already in the KV cache.
    `last` marks the prompt's final chunk, which emits the first output token (an LM-head row)."""

    length: int
    prefix: int = 0
    last: bool = False


@dataclass(frozen=True)
class Composition:
    """What one iteration holds: decode rows (each by its context length) and prefill chunks."""

    decode_contexts: tuple[int, ...] = ()
    chunks: tuple[Chunk, ...] = ()

    @property
    def decode_tokens(self) -> int:
        return len(self.decode_contexts)

    @property
    def prefill_tokens(self) -> int:
        return sum(c.length for c in self.chunks)

    @property
    def tokens(self) -> int:
        return self.decode_tokens + self.prefill_tokens


@dataclass(frozen=True)
class ComponentCost:
    flops: float
    bytes: float
    time_s: float   # this component alone on the roofline: max(flops / peak, bytes / bandwidth)


@dataclass(frozen=True)
class IterationCost:
    flops: float
    bytes: float
    compute_s: float
    memory_s: float
    time_s: float
    bound: str                      # "compute" or "memory"
    overhead_s: float               # the time the engine's CPU work adds (0 where it hides)
    components: dict[str, ComponentCost] = field(default_factory=dict)
    allreduce_s: float = 0.0        # tensor parallelism: the all-reduces' time
    factors: tuple[Factor, ...] = ()   # calibrated mode: why the time exceeds the roofline

    @property
    def kernels_s(self) -> float:
        """The time on the GPU's kernels, without the all-reduces and the CPU overhead it adds:
        max(compute, memory) on the roofline; calibrated, the kernels one after another, each
        through the soft ridge plus its floor."""
        return self.time_s - self.allreduce_s - self.overhead_s

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte."""
        return self.flops / self.bytes if self.bytes else float("inf")


def tensor_parallel_degree(gpu: Gpu, model: Model, tp) -> int:
    """`tp` checked: a whole number of GPUs that divides the query heads, whose KV heads it divides
    or replicates (vLLM's rule), on a GPU with a link preset."""
    n = check_number("tensor-parallel degree (tp)", tp, low=1, low_inclusive=True, high=64,
                     integer=True)
    if model.heads % n:
        raise InputError(f"tensor-parallel degree (tp) {n} must divide {model.name}'s "
                         f"{model.heads} query heads")
    if model.kv_heads % n and n % model.kv_heads:
        raise InputError(f"tensor-parallel degree (tp) {n} must divide {model.name}'s "
                         f"{model.kv_heads} KV heads or be a multiple of them")
    if n > 1 and not gpu.interconnect_bandwidth:
        if gpu.id == "custom":
            raise InputError(f"{gpu.name} has no GPU-to-GPU link (0 GB/s), which tensor "
                             "parallelism (tp > 1) needs; set its GPU-to-GPU link bandwidth (custom "
                             "GPU field), or pick a GPU with a link preset")
        raise InputError(f"{gpu.name} has no GPU-to-GPU link preset, which tensor parallelism "
                         "(tp > 1) needs; pick a GPU with a link preset")
    return n


def prefix_read(prefix, window: int = 0):
    """KV tokens read back from before a chunk (or a decode's context): the whole `prefix`, or
    at most `window` when the model has a sliding window. One rule for the engine's price, the
    re-read counts of the sweep and of the lanes. Works on numbers and numpy arrays."""
    return np.minimum(prefix, window) if window else prefix


def attended_pairs(prefix, length, window: int = 0):
    """Sum over a chunk's `length` new tokens of how many positions each attends to (itself and
    everything before it, at most `window` when the model has a sliding window). Works on numbers
    (the engine's per-iteration path) and on numpy arrays alike."""
    if not window:
        return length * prefix + length * (length + 1) / 2
    below = np.clip(window - prefix, 0, length)   # new tokens whose position is still <= window
    return below * prefix + below * (below + 1) / 2 + (length - below) * window


class CostModel:
    """Prices iterations for one (GPU, model, mode) on one engine's loop (`engine`, whose CPU
    overhead is synchronous or overlapped; vLLM V0's synchronous loop unless a policy's is given,
    see `for_engine`). Built once per simulation: the per-iteration path is a few
    multiplications on aggregates (tokens, attended pairs, KV tokens read, rows).

    `overhead_s` sets the CPU time per iteration; None takes the mode's own: the engine's
    measured figure when calibrated, 0 in the ideal modes."""

    def __init__(self, gpu: Gpu, model: Model, mode: str = "roofline", overhead_s: float | None = None,
                 tp: int = 1, engine: Overhead = VLLM_V0):
        if mode not in MODES:
            raise InputError(f"unknown cost mode {mode!r}; choose one of {', '.join(MODES)}")
        self.gpu, self.model, self.mode = gpu, model, mode
        self.tp = n = tensor_parallel_degree(gpu, model, tp)
        self.calibration = calibration_for(gpu) if mode == "calibrated" else None
        if overhead_s is not None:
            check_number("overhead (s)", overhead_s, low=0, low_inclusive=True, high=10)
        self.overhead_set_s = overhead_s
        self.engine = engine
        self.overhead_s = self._cpu_s(engine)
        m, w, a = model, model.weight_bytes_per_param, ACTIVATION_BYTES
        # per GPU: 1/n of the query heads and MLP columns; KV heads likewise, or one each (replicated)
        kv_heads_per_gpu = max(m.kv_heads // n, 1)
        self.kv_shards = m.kv_heads // kv_heads_per_gpu
        q_dim, kv_dim, inter = m.q_dim / n, kv_heads_per_gpu * m.head_dim, m.intermediate / n
        mlp_in_out = (2 * inter + m.hidden) + (inter + m.hidden) if m.gated_mlp \
            else 2 * (inter + m.hidden)
        gemm_in_out = (m.hidden + q_dim + 2 * kv_dim) + (q_dim + m.hidden) \
            + m.experts_per_token * mlp_in_out
        self.linear_flops_per_token = 2.0 * m.layers * m.active_layer_params / n
        self.linear_act_bytes_per_token = m.layers * a * gemm_in_out
        self.shared_weight_bytes = m.layers * (m.attention_params_per_layer
                                               + m.router_params_per_layer) * w / n
        self.expert_weight_bytes = m.layers * m.expert_params * w / n
        self.weight_bytes = m.weight_bytes / n
        self.kv_bytes_per_token = m.kv_bytes_per_token / self.kv_shards
        self.attention_flops_per_pair = 4.0 * m.q_dim * m.layers / n
        self.qo_bytes_per_token = 2.0 * m.q_dim * a * m.layers / n
        self.lm_head_flops_per_row = 2.0 * m.hidden * m.vocab / n
        self.lm_head_weight_bytes = m.hidden * m.vocab * w / n
        self.lm_head_act_bytes_per_row = (m.hidden + m.vocab / n) * a
        # kernels per component, for the calibrated floors: QKV, O, up and down GEMMs (and a MoE
        # router) per layer; one attention kernel per layer; one LM head
        self.kernels = (m.layers * (4 + (m.experts > 1)), m.layers, 1)

    @property
    def key(self) -> tuple:
        """What it is made from: two cost models made from the same price every iteration
        alike, and are one (a cache keyed on a run keys on them, sim/serving/run.py)."""
        return (self.gpu, self.model, self.mode, self.overhead_set_s, self.tp, self.engine)

    def __eq__(self, other) -> bool:
        return isinstance(other, CostModel) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def gemm_tile(self) -> int | None:
        """Token rows per GEMM tile in this mode: the calibration's; None in the ideal modes,
        which price every token alike."""
        return self.calibration.gemm_tile if self.calibration else None

    def _cpu_s(self, engine: Overhead) -> float:
        """The CPU time per iteration on `engine`: as set, else the mode's own."""
        if self.overhead_set_s is not None:
            return self.overhead_set_s
        return engine.cpu_s if self.calibration else 0.0

    def for_engine(self, engine: Overhead) -> CostModel:
        """The same model priced on `engine`'s loop (its CPU time unless one was set)."""
        if engine == self.engine:
            return self
        other = copy.copy(self)
        other.engine, other.overhead_s = engine, self._cpu_s(engine)
        return other

    def with_overhead(self, overhead_s: float) -> CostModel:
        """The same model with `overhead_s` of CPU time per iteration, on the same engine."""
        other = copy.copy(self)
        other.overhead_set_s = check_number("overhead (s)", overhead_s, low=0, low_inclusive=True,
                                            high=10)
        other.overhead_s = overhead_s
        return other

    # --- the formulas -------------------------------------------------------------------------
    def experts_touched(self, tokens: float) -> float:
        """Expected distinct experts per layer when `tokens` route uniformly to top-k of E."""
        m = self.model
        if m.experts == 1:
            return 1.0
        return m.experts * (1.0 - (1.0 - m.experts_per_token / m.experts) ** tokens)

    def component_work(self, tokens, attended, kv_read_tokens, rows):
        """(FLOPs, bytes) of linear, attention and LM head for an iteration given by aggregates:
        tokens in the pass, attended (query, key) pairs, cached KV tokens read, emitting rows."""
        if tokens <= 0:
            return (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)
        m = self.model
        if self.mode == "simple":
            linear = (2.0 * m.active_params * tokens / self.tp, self.weight_bytes)
            return linear, (0.0, 0.0), (0.0, 0.0)
        linear = (self.linear_flops_per_token * tokens,
                  self.shared_weight_bytes + self.experts_touched(tokens) * self.expert_weight_bytes
                  + self.linear_act_bytes_per_token * tokens)
        attention = (self.attention_flops_per_pair * attended,
                     self.kv_bytes_per_token * (kv_read_tokens + tokens) + self.qo_bytes_per_token * tokens)
        lm_head = (self.lm_head_flops_per_row * rows,
                   (self.lm_head_weight_bytes + self.lm_head_act_bytes_per_row * rows) if rows else 0.0)
        return linear, attention, lm_head

    def roofline_time(self, flops: float, nbytes: float) -> tuple[float, float]:
        """(compute seconds, memory seconds) of work on this GPU's roofline."""
        return flops / self.gpu.peak_flops, nbytes / self.gpu.bandwidth

    def allreduce_time(self, tokens, calibrated: bool) -> float:
        """Two ring all-reduces per layer of the tokens' activations, 2(N-1)/N x bytes / link
        bandwidth each; calibrated: on the achievable link bandwidth, plus a latency each."""
        if self.tp == 1:
            return 0.0
        n, m = self.tp, self.model
        nbytes = 2 * (n - 1) / n * tokens * m.hidden * ACTIVATION_BYTES
        each = nbytes / self.gpu.interconnect_bandwidth
        if calibrated:
            cal = self.calibration
            each = each / cal.link_efficiency + cal.allreduce_latency_s
        return 2 * m.layers * each

    def calibrated_time(self, parts, tokens, rows, **factors) -> tuple[float, float, float]:
        """(compute_s, memory_s, kernel time) with the components run one after another, GEMMs on
        whole tiles; `factors` (tiles, achievable, soft, floor) switch factors off for `explain`,
        `token_tiles` the tiles of the token GEMMs alone (the LM head's rows stay padded)."""
        cal = self.calibration
        tiles = factors.pop("tiles", True)
        token_tiles = factors.pop("token_tiles", tiles)
        pads = (cal.padded_tokens(tokens) / tokens if token_tiles and tokens else 1.0, 1.0,
                cal.padded_tokens(rows) / rows if tiles and rows else 1.0)
        efficiencies = (cal.gemm_efficiency, cal.attention_efficiency, cal.gemm_efficiency)
        compute_s = memory_s = time_s = 0.0
        for (flops, nbytes), pad, eff, kernels in zip(parts, pads, efficiencies, self.kernels):
            if flops or nbytes:
                c, mem, t = cal.kernel_seconds(flops * pad, nbytes, self.gpu, eff, kernels, **factors)
                compute_s, memory_s, time_s = compute_s + c, memory_s + mem, time_s + t
        return compute_s, memory_s, time_s

    # --- the two entry points -----------------------------------------------------------------
    def time(self, tokens, attended, kv_read_tokens, rows,
             token_tiles: bool = True) -> tuple[float, float, float, float]:
        """(compute_s, memory_s, time_s, overhead_s) from aggregates: the engine's per-iteration
        call; overhead_s is the part of time_s the CPU adds. `token_tiles=False`: the token GEMMs
        on exactly their rows, to say what their ragged last tile costs (sim/cost/tiles.py)."""
        parts = self.component_work(tokens, attended, kv_read_tokens, rows)
        if self.calibration:
            compute_s, memory_s, kernels_s = self.calibrated_time(parts, tokens, rows,
                                                                  token_tiles=token_tiles)
            gpu_s = kernels_s + self.allreduce_time(tokens, True)
        else:
            (linear_f, linear_b), (attention_f, attention_b), (head_f, head_b) = parts
            compute_s, memory_s = self.roofline_time(linear_f + attention_f + head_f,
                                                     linear_b + attention_b + head_b)
            gpu_s = max(compute_s, memory_s) + self.allreduce_time(tokens, False)
        added_s = self.engine.added_s(gpu_s, self.overhead_s)
        return compute_s, memory_s, gpu_s + added_s, added_s

    def price(self, composition: Composition) -> IterationCost:
        """The full breakdown of one iteration, for display and the `cost` command."""
        tokens, attended, kv_read, rows = self.aggregates(composition)
        parts = self.component_work(tokens, attended, kv_read, rows)
        calibrated = self.calibration is not None
        components = {}
        for name, (flops, nbytes) in zip(COMPONENTS, parts):
            if calibrated:
                alone = self.calibrated_time([(flops, nbytes) if n == name else (0.0, 0.0)
                                              for n in COMPONENTS], tokens, rows)[2]
            else:
                alone = max(self.roofline_time(flops, nbytes))
            components[name] = ComponentCost(flops, nbytes, alone)
        flops = sum(p[0] for p in parts)
        nbytes = sum(p[1] for p in parts)
        if calibrated:
            compute_s, memory_s, kernels_s = self.calibrated_time(parts, tokens, rows)
            factors = explain(self, parts, tokens, rows)
        else:
            compute_s, memory_s = self.roofline_time(flops, nbytes)
            kernels_s, factors = max(compute_s, memory_s), ()
        allreduce_s = self.allreduce_time(tokens, calibrated)
        added_s = self.engine.added_s(kernels_s + allreduce_s, self.overhead_s)
        return IterationCost(flops, nbytes, compute_s, memory_s, kernels_s + allreduce_s + added_s,
                             "compute" if compute_s >= memory_s else "memory",
                             added_s, components, allreduce_s, factors)

    def aggregates(self, composition: Composition) -> tuple[int, float, float, int]:
        """Reduce a composition to (tokens, attended pairs, KV tokens read, emitting rows)."""
        window = self.model.sliding_window
        contexts = np.asarray(composition.decode_contexts, dtype=np.float64)
        attended = float(np.sum(attended_pairs(contexts, 1, window)))
        kv_read = float(np.sum(prefix_read(contexts, window)))
        for chunk in composition.chunks:
            attended += float(attended_pairs(chunk.prefix, chunk.length, window))
            kv_read += prefix_read(chunk.prefix, window)
        rows = len(contexts) + sum(1 for c in composition.chunks if c.last)
        return composition.tokens, attended, kv_read, rows
