"""The engines as they ship: what surrounds a policy's loop in the engine it is named after,
each pinned to one release (KV blocks, watermark, what admission must find free, memory kept
back, CPU overhead, the defaults by GPU tier), every figure with its source."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from sim.cost import overhead as engine_overhead
from sim.cost.iteration import ACTIVATION_BYTES, CostModel
from sim.cost.overhead import Overhead
from sim.presets.hardware import GIB, Gpu, is_a100, memory_gib, tier_of

VLLM = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/"
VLLM_V0 = "https://github.com/vllm-project/vllm/blob/v0.4.0.post1/vllm/"
SGLANG = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/"
SARATHI = "https://github.com/microsoft/sarathi-serve/blob/osdi-sarathi-serve/"
MIB = 2**20


class Citation:
    """One cited figure of an engine profile: what it is, its value in words, and the addresses it is
    read from (a file and its lines at the release, or a paper)."""

    def __init__(self, what: str, value: str, *sources: str):
        self.what, self.value, self.sources = what, value, sources


@dataclass(frozen=True, kw_only=True)
class EngineProfile:
    """What surrounds a policy's loop in the engine it is named after, pinned to one release:
    KV blocks, the watermark, what admission must find free, the memory kept back, and the
    defaults a user who sets nothing gets. `citations` lists each with its source (docs/sources.md,
    "Engine profiles", says the same)."""
    engine: str                  # "vLLM V1"
    version: str                 # the release the figures are read from
    release: str                 # the release as a label shows it, short: "0.33"
    kv_block_tokens: int         # KV allocated in blocks of this many tokens
    kv_watermark: float          # share of KV blocks kept free when admitting
    budget: Callable[[Gpu], int] | None      # default token budget on this GPU (None: none, or
    #                                          the workload's: vLLM V0's `unchunked_budget`)
    max_seqs: Callable[[CostModel, int], int]   # default most running requests (cost, budget)
    reserve: Callable[[CostModel, int], float]   # memory share kept back (cost, budget)
    # its CPU time per iteration and whether it hides behind the GPU step (sim/cost/overhead.py)
    overhead: Overhead
    citations: tuple[Citation, ...]
    future_tokens: bool = False  # admission keeps room for running requests' future tokens
    kv_floor: bool = False       # each admitted request gets max_model_len of KV up front
    prompt_limit: bool = False   # a prompt longer than the budget is ignored (FINISHED_IGNORED)
    budget_flag: BudgetFlag | None = None   # where a server's users set `budget` (None: not one)
    # a preemption frees the running decoder with the fewest output tokens, ties to the longest
    # prompt (SGLang's retraction), not the newest holder
    retract_fewest_output: bool = False
    # the reserve's terms with this scenario's numbers, in words (None: its citation says it all)
    kept_back: Callable[[CostModel, int], str] | None = None
    # prefix caching on as shipped (vLLM V1's enable_prefix_caching, SGLang's radix cache)
    prefix_caching: bool = False

    @property
    def name(self) -> str:
        """The engine with its release: "vLLM V1 0.33.0"."""
        return f"{self.engine} {self.version}"


@dataclass(frozen=True)
class BudgetFlag:
    """The server flag that sets an engine's token budget, and why a GPU gets the default it
    gets (`rule`, in words: the engines read the device's memory in binary GiB, the lab shows
    every size in SI units)."""
    server: str                    # the program whose flag it is: "vLLM"
    flag: str                      # "--max-num-batched-tokens"
    rule: Callable[[Gpu], str]
    source: str                    # the file and lines at the release


def _gib_in_gb(gib: float) -> str:
    """An engine's threshold in binary GiB, shown in the lab's SI units: "75.2 GB (70 × 2³⁰ B)"."""
    return f"{gib * GIB / 1e9:.1f} GB ({gib:g} × 2³⁰ B)"


# vLLM 0.33.0's memory tiers for `vllm serve`'s defaults, GiB (vllm/engine/arg_utils.py:2973-3006)
VLLM_LARGE_GIB, VLLM_MID_GIB = 160, 70


def _vllm_budget(gpu: Gpu) -> int:
    """`vllm serve`'s max_num_batched_tokens (vllm/engine/arg_utils.py:2973-3006 at v0.33.0):
    16,384 with >= 160 GiB; 8,192 with >= 70 GiB and not an A100; else 2,048."""
    if memory_gib(gpu) >= VLLM_LARGE_GIB:
        return 16384
    return 8192 if memory_gib(gpu) >= VLLM_MID_GIB and not is_a100(gpu) else 2048


def _vllm_budget_rule(gpu: Gpu) -> str:
    gb = gpu.memory_bytes / 1e9
    if memory_gib(gpu) >= VLLM_LARGE_GIB:
        return f"{gb:.0f} GB ≥ {_gib_in_gb(VLLM_LARGE_GIB)}"
    if memory_gib(gpu) < VLLM_MID_GIB:
        return f"{gb:.0f} GB < {_gib_in_gb(VLLM_MID_GIB)}"
    if is_a100(gpu):
        return "an A100 (excluded by name: PR #17885)"
    return f"{gb:.0f} GB ≥ {_gib_in_gb(VLLM_MID_GIB)} and not an A100"


def _vllm_max_seqs(cost: CostModel, budget: int) -> int:
    """`max_num_seqs`: 1,024 on the two large tiers, 256 on A100s and smaller (same lines)."""
    return 256 if _vllm_budget(cost.gpu) == 2048 else 1024


def kv_capacity_bytes(cost: CostModel, reserve_fraction: float) -> float:
    """Memory left for the KV cache on each GPU: memory x (1 - reserve fraction) - its weights."""
    return cost.gpu.memory_bytes * (1 - reserve_fraction) - cost.weight_bytes


# vLLM V1 0.33.0 sizes its KV cache from gpu_memory_utilization (0.92) of the memory torch reports,
# less what its profile run measures beside the weights (v1/worker/gpu_worker.py:683-757,
# determine_available_memory): the activations' transient peak and, since v0.21.0, the CUDA graphs'
# memory (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default: envs.py:2219). Both are measured
# on the device; the lab estimates them (`vllm_profiled`).
VLLM_UTILIZATION = 0.92
VLLM_GRAPH_BYTES = 0.5 * GIB   # estimated: vLLM's logged "Estimated CUDA graph memory" is of
#                                this order for a dense model on one GPU (0.36 GiB in
#                                gpustack/runner#251's log), far more for large MoE setups
LOGIT_BYTES = 4                # float32 logits in the sampler


@dataclass(frozen=True)
class VllmProfiled:
    """What vLLM V1's profile run takes out of its 92% beside the weights, per GPU, estimated:
    the forward pass over the budget's tokens at its widest (the MLP's gate and up projections
    and their product: 3 x intermediate / tp values a token, 2 x for a plain MLP, x the experts a
    token visits), the sampler's dummy run over min(max_num_seqs, budget) rows (float32 logits and
    their probabilities: 2 x vocab x 4 B a row; v1/worker/gpu_model_runner.py:5545, 5866), and the
    CUDA graphs (`VLLM_GRAPH_BYTES`)."""
    mlp_bytes: float
    sampler_bytes: float
    graph_bytes: float

    @property
    def total(self) -> float:
        return self.mlp_bytes + self.sampler_bytes + self.graph_bytes


def vllm_profiled(cost: CostModel, budget: int) -> VllmProfiled:
    model = cost.model
    widths = (3 if model.gated_mlp else 2) * model.intermediate * model.experts_per_token / cost.tp
    rows = min(_vllm_max_seqs(cost, budget), budget)
    return VllmProfiled(budget * widths * ACTIVATION_BYTES, rows * 2 * model.vocab * LOGIT_BYTES,
                        VLLM_GRAPH_BYTES)


def _vllm_reserve(cost: CostModel, budget: int) -> float:
    """The share of the GPU's memory vLLM V1 keeps from its KV cache: the 8% beyond
    gpu_memory_utilization and its profile run's activations and CUDA graphs (`vllm_profiled`)."""
    return min(0.9, 1 - VLLM_UTILIZATION + vllm_profiled(cost, budget).total / cost.gpu.memory_bytes)


def _vllm_kept_back(cost: CostModel, budget: int) -> str:
    p = vllm_profiled(cost, budget)
    m, tp = cost.model, f" / {cost.tp}" if cost.tp > 1 else ""
    mlp = (f"{3 if m.gated_mlp else 2} × {m.intermediate:,}"
           + (f" × {m.experts_per_token}" if m.experts_per_token > 1 else "") + tp)
    rows = min(_vllm_max_seqs(cost, budget), budget)
    return (f"8% (gpu_memory_utilization 0.92) + the profile run's activations, estimated: "
            f"{budget:,} tokens × {mlp} × 2 B = {p.mlp_bytes / 1e9:.2f} GB in the feed-forward "
            f"layers, {rows:,} rows × 2 × {m.vocab:,} × 4 B = {p.sampler_bytes / 1e9:.2f} GB of "
            f"sampler logits, and {p.graph_bytes / 1e9:.2f} GB of CUDA graphs (estimated)")


# SGLang 0.5.23's --chunked-prefill-size by device memory (srt/arg_groups/memory_hook.py:90-177):
# (below this many GiB, this size), then the size above the last
SGLANG_CHUNK_TIERS, SGLANG_TOP_CHUNK = ((20, 2048), (60, 4096), (160, 8192)), 16384


def _sglang_budget(gpu: Gpu) -> int:
    """--chunked-prefill-size by GPU memory (srt/arg_groups/memory_hook.py:90-177 at v0.5.23):
    2,048 below 20 GiB, 4,096 below 60 GiB, 8,192 below 160 GiB, 16,384 above."""
    return tier_of(gpu, SGLANG_CHUNK_TIERS, SGLANG_TOP_CHUNK)


def _sglang_budget_rule(gpu: Gpu) -> str:
    gb = gpu.memory_bytes / 1e9
    below = next((gib for gib, _ in SGLANG_CHUNK_TIERS if memory_gib(gpu) < gib), None)
    if below is None:
        return f"{gb:.0f} GB ≥ {_gib_in_gb(SGLANG_CHUNK_TIERS[-1][0])}"
    return f"{gb:.0f} GB < {_gib_in_gb(below)}"


def prefill_graph_sizes(chunk: int) -> list[int]:
    """The token counts SGLang captures a prefill CUDA graph for, up to the chunk size
    (generate_prefill_cuda_graph_batch_sizes, srt/arg_groups/cuda_graph_hook.py:480-497)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, chunk + 1, 512)]
    return [size for size in sizes if size <= chunk]


@dataclass(frozen=True)
class SglangReserve:
    """SGLang's memory kept back, MiB, term by term (srt/arg_groups/memory_hook.py:305-326 at
    v0.5.23), and the share of the GPU it leaves out of mem_fraction_static."""
    chunk_mib: float          # 1.5 MiB per token of max(chunk size, 2,048)
    tp_mib: float             # tp / 8 GiB
    decode_graphs: int        # decode CUDA graph batch sizes, 2 MiB each (:368)
    prefill_graphs: int       # prefill CUDA graph sizes, 8 MiB each (:386)
    reserved_mib: float       # the terms' sum, at least 10 GiB above 60 GiB of memory
    share: float              # 1 - mem_fraction_static

    @property
    def terms_mib(self) -> float:
        return 512 + self.chunk_mib + self.tp_mib + 2 * self.decode_graphs + 8 * self.prefill_graphs


def sglang_reserve(cost: CostModel, budget: int) -> SglangReserve:
    """512 MiB + 1.5 MiB x max(chunk, 2,048) + tp/8 GiB + 2 MiB per decode CUDA graph batch size
    (by memory tier: 8, 48, 32, 256, 256, 512; 160 or 512 from tp 4) + 8 MiB per prefill CUDA
    graph size (captured on CUDA up to the chunk, 4,096 for Llama-2 models: memory_hook.py:236,
    260-263; none on ROCm: model_executor/cuda_graph_config.py:119-123), at least 10 GiB above
    60 GiB; mem_fraction_static = (memory - that) / memory in MiB, rounded to 3 places (:325)."""
    gpu, tp = cost.gpu, cost.tp
    decode = tier_of(gpu, ((20, 8), (35, 48 if tp < 4 else 160), (60, 32 if tp < 4 else 160),
                           (160, 256 if tp < 4 else 512)), 512)
    capture = min(budget, 4096) if "llama-2" in cost.model.name.lower() else budget
    prefill = len(prefill_graph_sizes(capture)) if not gpu.architecture.startswith("CDNA") else 0
    terms = SglangReserve(1.5 * max(budget, 2048), tp / 8 * 1024, decode, prefill, 0, 0)
    reserved = max(terms.terms_mib, 10 * 1024) if memory_gib(gpu) > 60 else terms.terms_mib
    gpu_mib = gpu.memory_bytes / MIB
    return replace(terms, reserved_mib=reserved,
                   share=min(0.9, 1 - round((gpu_mib - reserved) / gpu_mib, 3)))


def _sglang_reserve(cost: CostModel, budget: int) -> float:
    return sglang_reserve(cost, budget).share


def _sglang_kept_back(cost: CostModel, budget: int) -> str:
    r = sglang_reserve(cost, budget)
    floor = ", raised to its 10 GiB floor" if r.reserved_mib > r.terms_mib else ""
    return (f"512 MiB + 1.5 MiB × {max(budget, 2048):,} + {cost.tp}/8 GiB + 2 MiB × "
            f"{r.decode_graphs} decode graphs + 8 MiB × {r.prefill_graphs} prefill graphs = "
            f"{r.terms_mib:,.0f} MiB{floor}, a share of {cost.gpu.memory_bytes / MIB:,.0f} MiB "
            "rounded to 3 places (1 − mem_fraction_static)")


SGLANG_RUNNING_FLOOR, SGLANG_RUNNING_CEILING = 2048, 4096


def _sglang_max_seqs(cost: CostModel, budget: int) -> int:
    """max_running_requests: max(min(KV tokens / context_len x 512, 4,096), 2,048), at most half
    the KV tokens (srt/mem_cache/kv_cache_configurator.py:3119-3132 at v0.5.23); context_len is
    the model's (max_position_embeddings)."""
    free = kv_capacity_bytes(cost, _sglang_reserve(cost, budget))
    tokens = int(free // cost.kv_bytes_per_token) if free > 0 else 0
    estimated = max(min(int(tokens / cost.model.context_len * 512), SGLANG_RUNNING_CEILING),
                    SGLANG_RUNNING_FLOOR)
    return max(1, min(estimated, tokens // 2))


def _flat(share: float) -> Callable[[CostModel, int], float]:
    return lambda cost, budget: share


def _fixed(value: int) -> Callable[..., int]:
    return lambda *_: value   # the same on every GPU, model and budget


def _orca_batch(cost: CostModel, budget: int) -> int:
    """Orca's batch size in the Sarathi-Serve artifact: 16, 8 for the 70B and 180B models
    (osdi-experiments/figure-5-6/*.yml: "with higher batch size activation and kv cache memory
    blows up")."""
    return 8 if cost.model.params >= 60e9 else 16


PREFIX_CACHING_V1 = Citation(
    "prefix caching", "on (enable_prefix_caching = True): full 16-token blocks stay cached after "
    "their request, a hit at most prompt - 1 tokens; cached blocks nobody uses are free and "
    "evicted least recently used first, a request's tail blocks first; a preempted request's "
    "blocks stay cached",
    VLLM + "config/cache.py#L257", VLLM + "v1/core/kv_cache_manager.py#L294-L302",
    VLLM + "v1/core/block_pool.py#L706-L729",
    VLLM + "v1/core/single_type_kv_cache_manager.py#L598-L599",
    VLLM + "v1/core/single_type_kv_cache_manager.py#L255-L266",
    VLLM + "v1/core/sched/scheduler.py#L1799-L1817")
PREFIX_CACHING_SGLANG = Citation(
    "prefix caching", "on (the radix cache; --disable-radix-cache off): cached tokens matched "
    "token by token, at most prompt - 1; the least recently used leaves evicted first; the "
    "waiting queue first come first served (--schedule-policy fcfs), or longest prefix match "
    "first (lpm) while at most 128 requests wait",
    SGLANG + "arg_groups/fields/memory.py#L64-L70",
    SGLANG + "managers/schedule_batch.py#L1766-L1768",
    SGLANG + "mem_cache/radix_cache.py#L552-L575",
    SGLANG + "arg_groups/fields/schedule.py#L86-L102",
    SGLANG + "managers/schedule_policy.py#L304-L315",
    SGLANG + "managers/schedule_policy.py#L441-L450")

V1_PROFILE = EngineProfile(
    overhead=engine_overhead.VLLM_V1,
    engine="vLLM V1", version="0.33.0", release="0.33", kv_block_tokens=16, kv_watermark=0.0,
    prefix_caching=True,
    budget=_vllm_budget, max_seqs=_vllm_max_seqs, reserve=_vllm_reserve, kept_back=_vllm_kept_back,
    budget_flag=BudgetFlag("vLLM", "--max-num-batched-tokens", _vllm_budget_rule,
                           "vllm/engine/arg_utils.py#L2973-L3006 at v0.33.0 (vllm serve)"),
    citations=(
        Citation("admission", "a waiting request is admitted only if its whole prompt's KV blocks "
               "are free (scheduler_reserve_full_isl = True), then allocated chunk by chunk",
               VLLM + "config/scheduler.py#L190", VLLM + "v1/core/kv_cache_manager.py#L531-L547"),
        Citation("watermark", "0: no blocks kept free (applied to waiting and preempted requests)",
               VLLM + "config/scheduler.py#L196", VLLM + "v1/core/kv_cache_manager.py#L518-L525"),
        Citation("KV block", "16 tokens (DEFAULT_BLOCK_SIZE)", VLLM + "config/cache.py#L185"),
        Citation("memory kept back", "8% (gpu_memory_utilization 0.92), then the profile run's "
               "activation peak and CUDA graph memory out of the 92% (estimated: the MLP's "
               "widest activations over the budget's tokens, the sampler's float32 logits over "
               "min(max_num_seqs, budget) rows, 0.5 GiB of graphs)",
               VLLM + "config/cache.py#L215", VLLM + "v1/worker/gpu_worker.py#L683-L757",
               VLLM + "v1/worker/utils.py#L724-L726", VLLM + "envs.py#L2219-L2220",
               VLLM + "v1/worker/gpu_model_runner.py#L5545",
               VLLM + "v1/worker/gpu_model_runner.py#L6132-L6140"),
        Citation("budget, max running requests",
               "16,384 / 1,024 with >= 160 GiB; 8,192 / 1,024 with >= 70 GiB and not an A100; "
               "2,048 / 256 otherwise (vllm serve)", VLLM + "engine/arg_utils.py#L2973-L3006"),
        Citation("running-list order", "running requests in admission order (appended when "
               "admitted), each given min(what it needs, budget left); no admission in a step "
               "that preempted", VLLM + "v1/core/sched/scheduler.py#L795",
               VLLM + "v1/core/sched/scheduler.py#L1549", VLLM + "v1/core/sched/scheduler.py#L1050"),
        Citation("long prefill token threshold", "0 (default): no cap; N > 0 "
               "(--long-prefill-token-threshold N): a request computes at most N prompt tokens "
               "in an iteration, running or admitted, unless it is the only request running or "
               "waiting", VLLM + "config/scheduler.py#L79-L84",
               VLLM + "engine/arg_utils.py#L1772-L1773",
               VLLM + "v1/core/sched/scheduler.py#L754-L763",
               VLLM + "v1/core/sched/scheduler.py#L844-L845",
               VLLM + "v1/core/sched/scheduler.py#L1332-L1333"),
        PREFIX_CACHING_V1,
    ))

ARTIFACT_RESERVE = 0.15   # gpu_memory_utilization 0.85 in the Sarathi-Serve artifact's runs
ARTIFACT_MEMORY = Citation("memory kept back", "15% (gpu_memory_utilization 0.85)",
                         SARATHI + "sarathi/engine/arg_utils.py#L42",
                         SARATHI + "sarathi/benchmark/config/default.yml#L8")
ARTIFACT_BLOCK = Citation("KV block", "16 tokens", SARATHI + "sarathi/engine/arg_utils.py#L41")
ARTIFACT_RUNS = SARATHI + "osdi-experiments/figure-5-6/mistral7b_strict.yml#L1-L11"
ARTIFACT_WATERMARK = Citation(
    "watermark", "1% of KV blocks kept free",
    SARATHI + "sarathi/core/block_space_manager/base_block_space_manager.py#L57")

V0_PROFILE = EngineProfile(
    overhead=engine_overhead.VLLM_V0,
    engine="vLLM V0", version="0.4.0.post1", release="0.4", kv_block_tokens=16, kv_watermark=0.01,
    budget=None, max_seqs=_fixed(128), reserve=_flat(ARTIFACT_RESERVE),
    prompt_limit=True,
    citations=(
        Citation("prompt limit", "a prompt longer than the budget (prompt_limit = "
               "min(max_model_len, max_num_batched_tokens)) is ignored: FINISHED_IGNORED, no "
               "output; Sarathi-Serve's baseline declares the same limit",
               VLLM_V0 + "core/scheduler.py#L126-L127", VLLM_V0 + "core/scheduler.py#L244-L249",
               SARATHI + "sarathi/core/scheduler/vllm_scheduler.py#L25-L28"),
        Citation("budget without chunking", "max(max_model_len, 2,048), so any prompt fits",
               VLLM_V0 + "config.py#L562"),
        ARTIFACT_WATERMARK, ARTIFACT_BLOCK, ARTIFACT_MEMORY,
        Citation("max running requests", "128 (batch_size of the paper's vLLM runs)", ARTIFACT_RUNS),
    ))

SGLANG_PROFILE = EngineProfile(
    overhead=engine_overhead.SGLANG,
    engine="SGLang", version="0.5.23", release="0.5.23", kv_block_tokens=1, kv_watermark=0.0,
    budget=_sglang_budget, max_seqs=_sglang_max_seqs, reserve=_sglang_reserve,
    kept_back=_sglang_kept_back, retract_fewest_output=True,
    budget_flag=BudgetFlag("SGLang", "--chunked-prefill-size", _sglang_budget_rule,
                           "python/sglang/srt/arg_groups/memory_hook.py#L90-L177 at v0.5.23"),
    future_tokens=True, prefix_caching=True,
    citations=(
        Citation("admission", "running requests keep min(max_new_tokens - output, 4,096) x "
               "new_token_ratio, x 1.0 for a request that ignores EOS (as SGLang's benchmark "
               "sends every request unless --disable-ignore-eos); a new request needs its prompt "
               "+ min(max_new_tokens, 4,096)",
               SGLANG + "managers/schedule_policy.py#L785-L794",
               SGLANG + "managers/schedule_policy.py#L1407-L1412",
               "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/benchmark/"
               "serving.py#L315-L317"),
        Citation("new_token_ratio", "0.7, down by (0.7 - 0.098) / 600 a decode step to 0.098; "
               "after a retraction (decoded + 20 per request) / max_new_tokens; back to 0.7 when "
               "the server goes idle",
               SGLANG + "environ.py#L646-L650",
               SGLANG + "managers/scheduler_components/new_token_ratio_tracker.py#L20-L49",
               SGLANG + "managers/scheduler.py#L2050-L2053",
               SGLANG + "managers/scheduler.py#L5317-L5318"),
        Citation("max running requests", "max(min(KV tokens / context_len x 512, 4,096), 2,048), "
               "at most KV tokens / 2 (context_len: the model's max_position_embeddings)",
               SGLANG + "mem_cache/kv_cache_configurator.py#L3119-L3132"),
        Citation("retraction", "when the decode batch's KV does not fit, the running request "
               "with the fewest output tokens goes back to the queue, ties to the longest prompt "
               "(then the latest in the batch)",
               SGLANG + "managers/schedule_batch.py#L3451-L3467",
               SGLANG + "managers/schedule_batch.py#L3542-L3580"),
        Citation("chunk size", "2,048 below 20 GiB, 4,096 below 60 GiB, 8,192 below 160 GiB, "
               "16,384 above", SGLANG + "arg_groups/memory_hook.py#L90-L177"),
        Citation("memory kept back", "512 MiB + 1.5 MiB x max(chunk, 2,048) + tp/8 GiB + 2 MiB "
               "per decode CUDA graph batch size + 8 MiB per prefill CUDA graph size; at least "
               "10 GiB above 60 GiB",
               SGLANG + "arg_groups/memory_hook.py#L305-L326",
               SGLANG + "arg_groups/memory_hook.py#L357-L386",
               SGLANG + "arg_groups/memory_hook.py#L233-L268",
               SGLANG + "arg_groups/cuda_graph_hook.py#L480-L497",
               SGLANG + "model_executor/cuda_graph_config.py#L119-L123"),
        Citation("KV page", "1 token (page_size 1 on CUDA)",
               SGLANG + "arg_groups/overrides.py#L1340-L1363"),
        Citation("mixed chunk", "off (default); with --enable-mixed-chunk the running requests "
               "decode in the prefill batch, whose chunk is the chunk size less their number; "
               "new_token_ratio still falls after decode batches only",
               SGLANG + "arg_groups/fields/schedule.py#L208-L211",
               SGLANG + "managers/scheduler.py#L4165",
               SGLANG + "managers/schedule_policy.py#L654-L655",
               SGLANG + "managers/scheduler.py#L4375-L4395",
               SGLANG + "managers/scheduler.py#L4542"),
        PREFIX_CACHING_SGLANG,
    ))

SARATHI_PROFILE = EngineProfile(
    overhead=engine_overhead.SARATHI_SERVE,
    engine="Sarathi-Serve", version="OSDI'24 artifact", release="OSDI'24", kv_block_tokens=16, kv_watermark=0.01,
    budget=_fixed(512), max_seqs=_fixed(128), reserve=_flat(ARTIFACT_RESERVE),
    citations=(
        Citation("admission", "whole prompt's KV reserved at admission (the paper's section 4.2)",
               "https://arxiv.org/abs/2403.02310",
               SARATHI + "sarathi/core/scheduler/sarathi_scheduler.py#L131-L235"),
        ARTIFACT_WATERMARK,
        Citation("budget, batch cap", "chunk 512 (strict SLO; 2,048 relaxed), batch size 128",
               ARTIFACT_RUNS),
        ARTIFACT_BLOCK, ARTIFACT_MEMORY,
    ))

ORCA_PROFILE = EngineProfile(
    overhead=engine_overhead.ORCA,
    engine="Orca", version="Sarathi-Serve's OSDI'24 artifact", release="via Sarathi-Serve",
    kv_block_tokens=16,
    kv_watermark=0.0, budget=None, max_seqs=_orca_batch, reserve=_flat(ARTIFACT_RESERVE),
    kv_floor=True,
    citations=(
        Citation("admission", "ceil(max_model_len / 16) blocks per request, up front; no "
               "watermark", SARATHI + "sarathi/core/block_space_manager/"
               "orca_block_space_manager.py#L13-L17"),
        Citation("batch size", "16 (8 for the 70B and 180B models)", ARTIFACT_RUNS,
               SARATHI + "osdi-experiments/figure-5-6/llama70b_strict.yml#L5-L7"),
        ARTIFACT_BLOCK, ARTIFACT_MEMORY,
    ))
