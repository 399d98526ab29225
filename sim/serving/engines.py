"""The engines as they ship: what surrounds a policy's loop in the engine it is named after,
each pinned to one release (KV blocks, watermark, what admission must find free, memory kept
back, CPU overhead, the defaults by GPU tier), every figure with its source."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sim.cost import overhead as engine_overhead
from sim.cost.overhead import Overhead
from sim.presets.hardware import GIB, Gpu, is_a100, memory_gib, tier_of
from sim.presets.models import Model

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
    max_seqs: Callable[[Gpu, Model], int]    # default most running requests
    reserve: Callable[[Gpu, int, int], float]   # memory share kept back (GPU, budget, tp)
    # its CPU time per iteration and whether it hides behind the GPU step (sim/cost/overhead.py)
    overhead: Overhead
    citations: tuple[Citation, ...]
    future_tokens: bool = False  # admission keeps room for running requests' future tokens
    kv_floor: bool = False       # each admitted request gets max_model_len of KV up front
    prompt_limit: bool = False   # a prompt longer than the budget is ignored (FINISHED_IGNORED)
    budget_flag: BudgetFlag | None = None   # where a server's users set `budget` (None: not one)

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


def _vllm_max_seqs(gpu: Gpu, model: Model) -> int:
    """`max_num_seqs`: 1,024 on the two large tiers, 256 on A100s and smaller (same lines)."""
    return 256 if _vllm_budget(gpu) == 2048 else 1024


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


def _sglang_reserve(gpu: Gpu, budget: int, tp: int) -> float:
    """SGLang's memory kept back from the KV pool, as a share of the GPU's memory
    (srt/arg_groups/memory_hook.py:294-322, reserve_for_graph_mb :357-368 at v0.5.23): 512 MiB
    + 1.5 MiB per token of max(chunk size, 2,048) + tp/8 GiB + 2 MiB per decode CUDA graph
    batch size (by memory tier: 8, 48, 32, 256, 256, 512; 160 or 512 from tp 4), at least 10 GiB
    above 60 GiB."""
    graphs = tier_of(gpu, ((20, 8), (35, 48 if tp < 4 else 160), (60, 32 if tp < 4 else 160),
                           (160, 256 if tp < 4 else 512)), 512)
    reserved = 512 + 1.5 * max(budget, 2048) + tp / 8 * 1024 + 2 * graphs
    if memory_gib(gpu) > 60:
        reserved = max(reserved, 10 * 1024)
    return min(0.9, reserved * MIB / gpu.memory_bytes)


def _flat(share: float) -> Callable[[Gpu, int, int], float]:
    return lambda gpu, budget, tp: share


def _fixed(value: int) -> Callable[[Gpu], int]:
    return lambda gpu: value   # the same on every GPU


def _orca_batch(gpu: Gpu, model: Model) -> int:
    """Orca's batch size in the Sarathi-Serve artifact: 16, 8 for the 70B and 180B models
    (osdi-experiments/figure-5-6/*.yml: "with higher batch size activation and kv cache memory
    blows up")."""
    return 8 if model.params >= 60e9 else 16


V1_PROFILE = EngineProfile(
    overhead=engine_overhead.VLLM_V1,
    engine="vLLM V1", version="0.33.0", release="0.33", kv_block_tokens=16, kv_watermark=0.0,
    budget=_vllm_budget, max_seqs=_vllm_max_seqs, reserve=_flat(0.08),
    budget_flag=BudgetFlag("vLLM", "--max-num-batched-tokens", _vllm_budget_rule,
                           "vllm/engine/arg_utils.py#L2973-L3006 at v0.33.0 (vllm serve)"),
    citations=(
        Citation("admission", "a waiting request is admitted only if its whole prompt's KV blocks "
               "are free (scheduler_reserve_full_isl = True), then allocated chunk by chunk",
               VLLM + "config/scheduler.py#L190", VLLM + "v1/core/kv_cache_manager.py#L531-L547"),
        Citation("watermark", "0: no blocks kept free (applied to waiting and preempted requests)",
               VLLM + "config/scheduler.py#L196", VLLM + "v1/core/kv_cache_manager.py#L518-L525"),
        Citation("KV block", "16 tokens (DEFAULT_BLOCK_SIZE)", VLLM + "config/cache.py#L185"),
        Citation("memory kept back", "8% (gpu_memory_utilization 0.92)",
               VLLM + "config/cache.py#L215"),
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
    budget=None, max_seqs=lambda gpu, model: 128, reserve=_flat(ARTIFACT_RESERVE),
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
    budget=_sglang_budget, max_seqs=lambda gpu, model: 1024, reserve=_sglang_reserve,
    budget_flag=BudgetFlag("SGLang", "--chunked-prefill-size", _sglang_budget_rule,
                           "python/sglang/srt/arg_groups/memory_hook.py#L90-L177 at v0.5.23"),
    future_tokens=True,
    citations=(
        Citation("admission", "running requests keep min(max_new_tokens - output, 4,096) x "
               "new_token_ratio; a new request needs its prompt + min(max_new_tokens, 4,096)",
               SGLANG + "managers/schedule_policy.py#L785-L794",
               SGLANG + "managers/schedule_policy.py#L1407-L1412"),
        Citation("new_token_ratio", "0.7, down by (0.7 - 0.098) / 600 a decode step to 0.098; "
               "after a retraction (decoded + 20 per request) / max_new_tokens",
               SGLANG + "environ.py#L646-L650",
               SGLANG + "managers/scheduler_components/new_token_ratio_tracker.py#L20-L49"),
        Citation("chunk size", "2,048 below 20 GiB, 4,096 below 60 GiB, 8,192 below 160 GiB, "
               "16,384 above", SGLANG + "arg_groups/memory_hook.py#L90-L177"),
        Citation("memory kept back", "512 MiB + 1.5 MiB x max(chunk, 2,048) + tp/8 GiB + 2 MiB "
               "per decode CUDA graph batch size; at least 10 GiB above 60 GiB",
               SGLANG + "arg_groups/memory_hook.py#L294-L322",
               SGLANG + "arg_groups/memory_hook.py#L357-L368"),
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
    ))

SARATHI_PROFILE = EngineProfile(
    overhead=engine_overhead.SARATHI_SERVE,
    engine="Sarathi-Serve", version="OSDI'24 artifact", release="OSDI'24", kv_block_tokens=16, kv_watermark=0.01,
    budget=_fixed(512), max_seqs=lambda gpu, model: 128, reserve=_flat(ARTIFACT_RESERVE),
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
