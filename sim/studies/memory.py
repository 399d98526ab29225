"""KV memory: how much there is, how much a workload needs, and what running out costs.

The engine counts KV in tokens (`Trace.kv_used_tokens` per iteration, `Trace.kv_capacity_tokens`,
preemptions and recomputed tokens per request). This module turns those into the quantities the
Memory page explains, each a `Step` (formula, numbers substituted, value, unit) like the worked
example, so every figure on screen shows where it came from.

Admission differs by policy (`PolicySpec.reserve_whole_prompt` and its engine profile):
Sarathi-Serve and SGLang reserve a request's whole prompt at admission (SGLang its output too), so
a prefill never stalls half-way for memory; vLLM V1 admits a request once its whole prompt's KV is
free but allocates it per scheduled chunk, so decodes growing into a full cache can preempt it;
Orca reserves max_model_len per request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from sim.cost.iteration import CostModel
from sim.errors import check_number
from sim.serving.engine import Trace, kv_capacity_bytes, kv_capacity_tokens, policy_reserve
from sim.serving.policies import DEFAULT_LIMITS, POLICIES, Limits, PolicySpec, names_in_prose
from sim.serving.workloads import TEXTBOOK
from sim.studies.worked_example import DEFAULTS as WORKED_DEFAULTS
from sim.studies.worked_example import Step
from sim.units import fmt_bytes, fmt_count, fmt_flops


def admission_rule(policy: PolicySpec, limits: Limits = DEFAULT_LIMITS) -> str:
    """How `policy`'s engine admits a request under `limits`, in words (its profile:
    sim/serving/engines.py; SGLang's running requests keep all their output's KV while they
    ignore EOS, `Limits.disable_ignore_eos`)."""
    profile = policy.profile
    if profile.kv_floor:
        return ("reserves max_model_len of KV for each request when it is admitted (the longest "
                "request here), whatever its prompt")
    extra = (" plus its output (up to 4,096 tokens), beside what the running requests keep for "
             "theirs" if profile.future_tokens else "")
    kept = ("" if not profile.future_tokens else
            "; they keep new_token_ratio of it (0.7, falling to 0.098), as requests that may stop "
            "at EOS" if limits.disable_ignore_eos else
            "; they keep all of it, as requests that ignore EOS (as SGLang's benchmark sends them)")
    if policy.reserve_whole_prompt:
        return (f"reserves KV for the whole prompt{extra} when a request is admitted (it never "
                f"stalls half-way through its prefill for memory){kept}")
    return ("admits a request only when its whole prompt's KV is free, then allocates it chunk "
            "by chunk as the prefill runs (decodes growing into a full cache may preempt it)")


def kv_footprint(count: int, tokens: int, kv_bytes_per_token: float,
                 title: str = "KV of simultaneous prompts", count_name: str = "prompts",
                 tokens_name: str = "tokens") -> Step:
    """count x tokens x KV bytes per token: the source article's "20 simultaneous 8,192-token
    prompts" at 131,072 B per token (21.5 GB; the article writes 20 GiB). `count_name` and
    `tokens_name` say in the formula (and in an error) what is counted: prompts and their tokens,
    or streams and their context."""
    n = check_number(count_name, count, low=0, low_inclusive=True, high=1e9, integer=True)
    t = check_number(tokens_name, tokens, low=0, low_inclusive=True, high=1e9, integer=True)
    per = check_number("KV bytes per token", kv_bytes_per_token, high=1e9)
    return Step("kv_footprint", title, f"{count_name} × {tokens_name} × KV bytes per token",
                f"{n:,} × {t:,} × {fmt_bytes(per)}", n * t * per, "B")


@dataclass(frozen=True)
class KvCapacity:
    """The KV cache one engine sizes on this GPU, as its runs size it (`simulate` keeps back the
    policy's engine reserve, `policy_reserve`): memory × (1 − reserve) − weights, then that over
    the KV bytes per token, in whole KV blocks (the pool's `KvPool.capacity`)."""
    policy: PolicySpec
    reserve: float          # share of GPU memory the engine keeps back
    kept_back: str          # the engine's rule for it, in words (its profile's citation)
    bytes: Step             # at or below 0 where the weights do not fit beside the reserve
    tokens: Step            # 0 where they do not

    @property
    def fits(self) -> bool:
        return self.bytes.value > 0


def binary_sizes(rule: str) -> str:
    """An engine's rule as its source writes it, in MiB and GiB, with those sizes written as the
    lab writes bytes that are not SI ("512 × 2²⁰ B", as sim/serving/engines.py's thresholds): the
    lab's pages say GB for 10⁹ bytes and never use the binary prefixes."""
    rule = re.sub(r"\b(\S+) MiB\b", r"\1 × 2²⁰ B", rule)
    return re.sub(r"\b(\S+) GiB\b", r"\1 × 2³⁰ B", rule).replace(" x ", " × ")


def kv_capacity(cost: CostModel, policy: PolicySpec, budget: int) -> KvCapacity:
    """`policy`'s KV capacity on `cost`'s GPU at `budget` (SGLang's reserve grows with its
    chunk), per GPU under tensor parallelism."""
    reserve = policy_reserve(policy, cost, budget)
    per, block = cost.kv_bytes_per_token, policy.profile.kv_block_tokens
    free = kv_capacity_bytes(cost, reserve)
    memory = cost.gpu.memory_bytes
    tp = f" / {cost.tp} GPUs" if cost.tp > 1 else ""
    blocks = (("⌊KV capacity / KV bytes per token / block⌋ × block", f" / {block}⌋ × {block}")
              if block > 1 else ("⌊KV capacity / KV bytes per token⌋", "⌋"))
    tokens = (Step("kv_capacity_tokens", f"KV capacity under {policy.engine}, in tokens",
                   blocks[0], f"⌊{fmt_bytes(free)} / {fmt_bytes(per)}{blocks[1]}",
                   kv_capacity_tokens(cost, reserve) // block * block, "tokens") if free > 0 else
              Step("kv_capacity_tokens", f"KV capacity under {policy.engine}, in tokens",
                   blocks[0], "the weights do not fit beside what it keeps back", 0, "tokens"))
    profile = policy.profile
    rule = binary_sizes(profile.kept_back(cost, budget) if profile.kept_back else
                        next(c.value for c in profile.citations if c.what == "memory kept back"))
    return KvCapacity(
        policy, reserve, f"{reserve:.4g} of {fmt_bytes(memory)} = {fmt_bytes(memory * reserve)}: "
                         f"{rule}",
        Step("kv_capacity_bytes", f"KV capacity under {policy.engine}",
             "memory × (1 − reserve) − weights" + (" per GPU" if tp else ""),
             f"{fmt_bytes(memory)} × (1 − {reserve:.4g}) − {fmt_bytes(cost.weight_bytes)}", free,
             "B"),
        tokens)


def kv_capacities(cost: CostModel, budget: int) -> list[KvCapacity]:
    """Every engine's KV capacity at `budget`, in the registry's order (the Memory page's table);
    an InputError, the engine's own, when the weights fit beside no engine's reserve."""
    capacities = [kv_capacity(cost, spec, budget) for spec in POLICIES.values()]
    if not any(c.fits for c in capacities):
        least = min(capacities, key=lambda c: c.reserve)
        kv_capacity_tokens(cost, least.reserve)    # raises: the weights do not fit
    return capacities


def memory_steps(cost: CostModel) -> list[Step]:
    """What every engine's KV capacity starts from: the GPU's memory as the device reports it (the
    engines size KV from that, not the datasheet's round figure), the weights (per GPU under
    tensor parallelism) and the KV bytes per token."""
    gpu, model = cost.gpu, cost.model
    tp, shards = (f" / {cost.tp} GPUs", f" / {cost.kv_shards}") if cost.tp > 1 else ("", "")
    return [
        Step("gpu_memory", "GPU memory", "as the device reports it",
             f"{gpu.name}: {gpu.memory_bytes / 2**20:,.0f} × 2²⁰ B, {gpu.memory_source}"
             if gpu.memory_bytes != gpu.datasheet_bytes else f"{gpu.name}: {gpu.memory_source}",
             gpu.memory_bytes, "B"),
        Step("weights", "Weights", "params × bytes per param" + (" / tp" if tp else ""),
             f"{model.params:,.0f} × {model.weight_bytes_per_param:g} B{tp}", cost.weight_bytes,
             "B"),
        Step("kv_bytes_per_token", "KV bytes per token",
             "2 (K, V) × layers × KV heads × head dim × bytes" + (" / KV shards" if tp else ""),
             f"2 × {model.layers} × {model.kv_heads} × {model.head_dim} × "
             f"{model.kv_bytes_per_element:g} B{shards}", cost.kv_bytes_per_token, "B"),
    ]


@dataclass(frozen=True)
class KvShare:
    """The engines that keep back the same share of memory: their KV capacity (bytes) and the
    share of it a workload's KV takes."""
    engines: tuple[str, ...]
    reserve: float
    capacity: Step
    share: Step


@dataclass(frozen=True)
class KvPressure:
    prompts: Step
    streams: Step
    together: Step
    shares: tuple[KvShare, ...]     # one per distinct engine reserve, in the registry's order
    left_out: tuple[str, ...]       # engines whose reserve leaves no room beside the weights

    @property
    def steps(self) -> list[Step]:
        """The table's rows: the two footprints, their sum, then each capacity and its share."""
        return [self.prompts, self.streams, self.together,
                *(step for s in self.shares for step in (s.capacity, s.share))]


def kv_pressure(cost: CostModel, prompts: int, prompt_tokens: int, streams: int,
                context: int, budget: int) -> KvPressure:
    """The source article's arithmetic on the current model and GPU: `prompts` prompts of
    `prompt_tokens` held at once, beside `streams` streams of `context` tokens, against each
    engine's own KV capacity at `budget` (`kv_capacity`, an InputError when the weights do not
    fit). The article: 20 simultaneous 8,192-token prompts beside 64 streams at 4,000 tokens of
    context put "the budget under pressure" (`article_pressure`)."""
    per = cost.kv_bytes_per_token
    new = kv_footprint(prompts, prompt_tokens, per, "KV of the simultaneous prompts")
    running = kv_footprint(streams, context, per, "KV of the running streams",
                           count_name="streams", tokens_name="context")
    total = new.value + running.value
    together = Step("kv_total", "Together", "prompts' KV + streams' KV",
                    f"{fmt_bytes(new.value)} + {fmt_bytes(running.value)}", total, "B")
    groups: dict[float, list[KvCapacity]] = {}
    capacities = kv_capacities(cost, budget)
    for capacity in capacities:
        if capacity.fits:
            groups.setdefault(capacity.reserve, []).append(capacity)
    shares = []
    for reserve, same in groups.items():
        engines = tuple(c.policy.engine for c in same)
        named = names_in_prose(engines)
        capacity = replace(same[0].bytes, title=f"KV capacity under {named}")
        shares.append(KvShare(engines, reserve, capacity, Step(
            "kv_share", f"Share of the KV capacity under {named}", "together / KV capacity",
            f"{fmt_bytes(total)} / {fmt_bytes(capacity.value)}", total / capacity.value, "%")))
    return KvPressure(new, running, together, tuple(shares),
                      tuple(c.policy.engine for c in capacities if not c.fits))


# The source article's example of KV pressure, on its own layout (Llama-3-8B-like: the worked
# example's defaults, 131,072 B of KV per token) and its "80 GB card after 16 GB of weights".
ARTICLE_PRESSURE = dict(prompts=20, prompt_tokens=TEXTBOOK.prompt, streams=TEXTBOOK.decodes,
                        context=TEXTBOOK.context)
ARTICLE_GPU_BYTES = 80e9


def article_pressure() -> tuple[Step, Step, float]:
    """The article's two KV footprints (the prompts', the streams') and its weight bytes, in the
    lab's units: 21.5 GB and 33.6 GB beside 16 GB of weights (the article rounds to 20 and 32 GiB)."""
    d = WORKED_DEFAULTS
    per = 2 * d["layers"] * d["kv_heads"] * d["head_dim"] * d["kv_bytes"]
    a = ARTICLE_PRESSURE
    return (kv_footprint(a["prompts"], a["prompt_tokens"], per, "KV of the simultaneous prompts"),
            kv_footprint(a["streams"], a["context"], per, "KV of the running streams",
                         count_name="streams", tokens_name="context"),
            d["params"] * d["bytes_per_param"])


@dataclass(frozen=True)
class KvUsage:
    capacity_tokens: int
    peak_used_tokens: int
    peak_fraction: float            # peak used / capacity
    preempted_requests: int
    preemptions: int
    recomputed_tokens: int
    wasted: Step                    # the compute the recomputation cost, at peak FLOP/s
    # the most KV cached blocks nobody reads held at an iteration's end (prefix caching: free,
    # evicted least recently used first); None: the run cached no prefixes
    peak_cached_tokens: int | None = None


def kv_usage(trace: Trace, cost: CostModel) -> KvUsage:
    """Peak KV use and the work preemptions wasted. Recompute time is a lower bound: recomputed
    tokens x FLOPs per token per GPU (2 x active params / tensor-parallel GPUs, no attention) /
    peak FLOP/s."""
    peak = int(trace.kv_used_tokens.max(initial=0))
    recomputed = int(trace.recomputed_tokens.sum())
    flops_per_token = cost.model.flops_per_token / cost.tp
    per_gpu = f" / {cost.tp} GPUs" if cost.tp > 1 else ""
    wasted = Step("recompute_s", "Work wasted on recomputation",
                  f"recomputed tokens × FLOPs per token{per_gpu} / peak FLOP/s",
                  f"{fmt_count(recomputed)} × {fmt_flops(flops_per_token)} / "
                  f"{cost.gpu.peak_flops / 1e12:g} TFLOP/s",
                  recomputed * flops_per_token / cost.gpu.peak_flops, "s")
    return KvUsage(trace.kv_capacity_tokens, peak, peak / trace.kv_capacity_tokens,
                   int(np.count_nonzero(trace.preemptions)), int(trace.preemptions.sum()),
                   recomputed, wasted,
                   None if trace.cached_tokens is None or trace.kv_cached_tokens is None
                   else int(trace.kv_cached_tokens.max(initial=0)))
