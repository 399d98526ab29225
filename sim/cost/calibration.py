"""The `calibrated` cost mode: what real kernels achieve, instead of the roofline's peak.

A roofline is a lower bound: measured weight GEMMs on an A100 run 1.3-1.9x slower than it. The
calibrated mode keeps the same work (FLOPs and bytes per component, from `CostModel.component_work`)
and prices it the way real kernels run, one factor at a time so a learner can see why a point moved:

1. kernels in sequence: the roofline lets one component's idle compute hide another's memory
   traffic; real kernels (GEMMs, attention, LM head) run one after another, each paying its own bound;
2. tile quantization: a GEMM computes whole tiles of `gemm_tile` token rows, so 257 tokens cost the
   FLOPs of 320 (a GEMM smaller than a tile uses the smallest power-of-two tile that holds it);
3. achievable throughput: GEMMs sustain `gemm_efficiency` of peak FLOP/s, attention kernels
   `attention_efficiency`, and memory traffic `memory_efficiency` of the HBM bandwidth;
4. soft ridge: near the ridge neither unit runs flat out, so a kernel takes
   (c^n + m^n)^(1/n) instead of max(c, m), with n = `ridge_softness`;
5. kernel floor: every kernel adds a fixed `kernel_floor_s` (its ramp-up and tail), which
   dominates small kernels;
6. all-reduce (tensor parallelism): links sustain `link_efficiency` of their bandwidth, and each
   all-reduce pays `allreduce_latency_s`;
7. per-iteration overhead: scheduling, input preparation and sampling on the CPU, once per
   iteration; it adds to the GPU time on a synchronous engine and hides behind it on one that
   overlaps the two (the engine's figure and rule: `sim/cost/overhead.py`).

Together these make small GEMMs inefficient: useful FLOPs per second rise with tokens as the
floor, the padding and the ridge are amortized. (A separate efficiency curve rising with tokens,
eff x T / (T + T0), was tried while building the fit and dropped: T0 fitted to under one token once
the factors above were in.)

The tile height, GEMM and memory efficiencies, ridge softness and kernel floor are fitted on
measured A100 GEMM times (`sim/cost/validation.py`); the attention and link efficiencies, the
all-reduce latency and the per-iteration overhead are published figures. Other GPUs get the same
fractions of their own datasheet peaks and bandwidths, not a fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sim.cost.overhead import MEASURED_CPU_S
from sim.errors import InputError, check_number
from sim.presets.hardware import Gpu
from sim.units import fmt_seconds

# --- GEMM tiles -----------------------------------------------------------------------------------
SMALLEST_TILE = 16    # the tensor cores' MMA height: no GEMM tile is shorter
LARGEST_TILE = 256    # the tallest tile the fit tries (`sim.cost.validation`)


def tile_used(tokens: float, tile: int) -> int:
    """The tile a GEMM of `tokens` rows runs on: `tile`, or below one tile the smallest power of
    two >= 16 that holds them (a small GEMM is not padded to a whole large tile)."""
    if 0 < tokens < tile:
        return max(SMALLEST_TILE, 1 << (math.ceil(tokens) - 1).bit_length())
    return tile


def padded_rows(tokens: float, tile: int | None) -> float:
    """Token rows a GEMM computes for `tokens`: rounded up to whole tiles of `tile_used`; exactly
    `tokens` where there are no tiles (`tile` None: the simple and roofline modes)."""
    if tokens <= 0:
        return 0.0
    if tile is None:
        return float(tokens)
    used = tile_used(tokens, tile)
    return float(math.ceil(tokens / used) * used)


def wasted_rows(tokens: float, tile: int | None) -> float:
    """The empty rows of the last tile: `padded_rows` − `tokens` (0 without tiles)."""
    return padded_rows(tokens, tile) - max(float(tokens), 0.0)


def checked_tile(tile, name: str) -> int:
    """A GPU's own tile height, checked: a power of two from 16 to 256 rows, so a GEMM below one
    tile still gets a power-of-two tile no taller than it (`tile_used`)."""
    rows = check_number(f"{name}'s GEMM tile (token rows)", tile, low=SMALLEST_TILE,
                        low_inclusive=True, high=LARGEST_TILE, integer=True)
    if rows & (rows - 1):
        raise InputError(f"{name}'s GEMM tile must be a power of two (16, 32, 64, 128 or 256 token "
                         f"rows), got {rows}")
    return rows


@dataclass(frozen=True)
class Calibration:
    """How far one GPU's kernels fall short of its datasheet, as fractions and fixed times."""

    gemm_efficiency: float        # fraction of peak FLOP/s a weight GEMM sustains
    memory_efficiency: float      # fraction of HBM bandwidth a kernel's traffic sustains
    attention_efficiency: float   # fraction of peak FLOP/s the attention kernel sustains
    ridge_softness: float         # n in (c^n + m^n)^(1/n); larger n is a sharper ridge
    kernel_floor_s: float         # fixed time every kernel adds
    gemm_tile: int                # token rows per GEMM tile
    link_efficiency: float        # fraction of the GPU-to-GPU link an all-reduce sustains
    allreduce_latency_s: float    # fixed time per all-reduce
    provenance: str               # where this GPU's figures come from

    def padded_tokens(self, tokens: float) -> float:
        """Token rows a GEMM actually computes: `tokens` rounded up to whole tiles."""
        return padded_rows(tokens, self.gemm_tile)

    def soft_max(self, compute_s, memory_s):
        """(c^n + m^n)^(1/n): max(c, m) far from the ridge, more than either near it."""
        n = self.ridge_softness
        return (compute_s ** n + memory_s ** n) ** (1.0 / n)

    def kernel_seconds(self, flops, nbytes, gpu: Gpu, efficiency: float, kernels: float = 1.0, *,
                       achievable=True, soft=True, floor=True):
        """(compute_s, memory_s, time_s) of `kernels` kernels doing this work: on achievable
        throughput (else peak), through the soft ridge (else max), plus their floors. `flops`
        already counts the padded tiles. The flags switch factors off for `explain`; numpy arrays
        work too (the fit)."""
        compute_s = flops / (gpu.peak_flops * (efficiency if achievable else 1.0))
        memory_s = nbytes / (gpu.bandwidth * (self.memory_efficiency if achievable else 1.0))
        time_s = self.soft_max(compute_s, memory_s) if soft else np.maximum(compute_s, memory_s)
        return compute_s, memory_s, time_s + (kernels * self.kernel_floor_s if floor else 0.0)


# --- the A100 fit ---------------------------------------------------------------------------------
# gemm_efficiency, memory_efficiency, ridge_softness, kernel_floor_s and gemm_tile are fitted by
# `sim.cost.validation.fit_gemms()` (`python -m sim validate --refit`) on the measured per-GEMM times in
# sim/cost/data (microsoft/vidur, A100-80GB, Llama-2-7B, TP=1, every fourth token count; the tile is
# the one of 16..256 rows with the lowest training error). `python -m sim validate` reports the
# error on the points the fit did not see.
A100 = Calibration(
    gemm_efficiency=0.6988,
    memory_efficiency=0.8380,
    ridge_softness=2.590,
    kernel_floor_s=5.963e-6,
    gemm_tile=64,
    # FlashAttention-2 (arXiv 2307.08691): the forward pass reaches "50-73% of the theoretical
    # maximum FLOPs/s on A100"; the low end, since serving chunks are shorter than its benchmarks.
    attention_efficiency=0.50,
    # nccl-tests#149: 8x A100-80GB SXM all_reduce_perf reaches a busbw of ~200 GB/s against the
    # 300 GB/s NVLink 3 carries each way.
    link_efficiency=200 / 300,
    # NVIDIA/nccl#1259: a small all-reduce takes ~6 us on 2x H100 with CUDA graphs; the only
    # published small-message figure at hand, used for every GPU.
    allreduce_latency_s=6e-6,
    provenance="fitted on measured A100-80GB GEMMs (microsoft/vidur) and published figures",
)

# Other GPUs, by their chip family (`Gpu.architecture`): the A100 fractions on their own
# datasheet peak and bandwidth, and the attention kernel their serving stacks use. No other
# fitting. `{gpu}` in a provenance is the GPU's name.
HOPPER = replace(
    A100,
    # FlashAttention-3 (arXiv 2407.08608): FlashAttention-2 reaches "only 35% utilization on the
    # H100"; FA3 is 1.5-2.0x faster: 0.35 x 1.5 at the low end.
    attention_efficiency=0.35 * 1.5,
    provenance="A100 fit applied to the {gpu} datasheet; attention from FlashAttention-3")
BY_ARCHITECTURE: dict[str, Calibration] = {
    "Ampere": A100,
    "Hopper": HOPPER,
    "Blackwell": replace(HOPPER, provenance="A100 fit applied to the {gpu} datasheet; attention "
                                            "efficiency assumed as on H100 (FlashAttention-3)"),
}
# A GPU whose family has no calibration of its own (Ada Lovelace, CDNA 3, one not listed yet)
FALLBACK = replace(A100, provenance="no calibration for its family ({architecture}): the A100 "
                                    "fit applied to the {gpu} datasheet; attention efficiency "
                                    "assumed as on A100")

# Where each factor of `explain` gets its figures, in short (the full citations are beside the
# numbers above), for readers of the fidelity page.
FACTOR_SOURCES = {
    "kernels in sequence": "no figure: how kernels run (one after another on the GPU); the kernel "
                           "count per layer is the model's (QKV, O, up, down GEMMs, attention)",
    "tile quantization": "tile height fitted on the measured A100 GEMMs (microsoft/vidur); the "
                         "step it makes is reported by Sarathi-Serve (arXiv 2403.02310, section 4.3)",
    "achievable throughput": "GEMM and memory efficiency fitted on the measured A100 GEMMs "
                             "(microsoft/vidur); attention: FlashAttention-2 (arXiv 2307.08691) "
                             f"on A100 ({A100.attention_efficiency:.1%}), FlashAttention-3 (arXiv "
                             f"2407.08608) on H100/H200 ({HOPPER.attention_efficiency:.1%})",
    "soft ridge": "ridge softness fitted on the measured A100 GEMMs (microsoft/vidur)",
    "kernel floors": "floor per kernel fitted on the measured A100 GEMMs (microsoft/vidur)",
    "all-reduce": "link efficiency from nccl-tests#149 (8x A100 busbw), latency from NVIDIA/nccl#1259"
                  " (2x H100); not fitted, and the GEMM measurements leave it out, so they do not "
                  "check it",
    "per-iteration overhead": "the CPU time: vLLM V0 profiles in vllm-project/vllm#6854; whether "
                              "it hides: each engine's release (vLLM V1 0.33.0 async scheduling, "
                              "SGLang 0.5.23 overlap scheduler, the Sarathi-Serve artifact's "
                              "synchronous loop); not fitted, and the GEMM measurements leave it "
                              "out",
}


def factor_rules(cal: Calibration) -> dict[str, str]:
    """Each factor of `explain` as a rule with `cal`'s figures: the one wording of it, which the
    fidelity page lists and each Factor's `why` starts with (then its iteration's numbers)."""
    n = cal.ridge_softness
    return {
        "kernels in sequence":
            "the roofline prices an iteration as one pass, max(total FLOPs / peak, total bytes / "
            "bandwidth), so one component's memory time can hide behind another's compute; a GPU "
            "runs its kernels one after another (per layer the QKV, O, gate+up and down GEMMs and "
            "a MoE router if any, then attention; the LM head last), each at its own bound",
        "tile quantization":
            f"GEMMs compute their token rows in whole tiles of {cal.gemm_tile} (below one tile, the "
            f"smallest power of two ≥ 16 that holds them): 257 tokens cost the FLOPs of "
            f"{cal.padded_tokens(257):,.0f}, 65 those of {cal.padded_tokens(65):,.0f}; a batch "
            f"that is a multiple of {cal.gemm_tile} tokens wastes none",
        "achievable throughput":
            f"no kernel runs at the datasheet peak: weight GEMMs sustain {cal.gemm_efficiency:.1%} "
            f"of peak FLOP/s, attention kernels {cal.attention_efficiency:.1%}, memory traffic "
            f"{cal.memory_efficiency:.1%} of the bandwidth; each time is divided by its fraction",
        "soft ridge":
            f"near the ridge neither compute nor memory runs flat out: a kernel takes "
            f"(c^n + m^n)^(1/n) with n = {n:.3g} instead of max(c, m), which is 2^(1/n) = "
            f"{2 ** (1 / n):.2f} × the max where c = m and the max far from the ridge",
        "kernel floors":
            f"every kernel takes at least {cal.kernel_floor_s * 1e6:.3g} µs to start its blocks and "
            "drain them, however few tokens it holds",
        "all-reduce":
            "with tensor parallelism over N GPUs each layer ends its attention and its multilayer "
            "perceptron (MLP) with an all-reduce: a ring moves 2(N − 1)/N × tokens × hidden × 2 bytes per GPU over the "
            f"link, which sustains {cal.link_efficiency:.0%} of its one-way bandwidth, plus "
            f"{cal.allreduce_latency_s * 1e6:.3g} µs each",
        "per-iteration overhead":
            "between forward passes the server schedules, prepares inputs and samples on the CPU: "
            f"{fmt_seconds(MEASURED_CPU_S)} per iteration in vLLM V0's profiles. A synchronous engine (vLLM "
            "V0, the Sarathi-Serve artifact, Orca as it runs there) idles the GPU meanwhile: "
            "GPU + CPU; vLLM V1 and SGLang prepare the next step while the GPU runs this one: "
            "max(GPU, CPU), so it shows only where it is longer (`python -m sim cost "
            "--overhead-ms` sets the CPU time)",
    }


def calibration_for(gpu: Gpu) -> Calibration:
    """The calibration of `gpu`'s chip family, its provenance naming the GPU, or the A100
    fractions where the family has none (a custom GPU's, or a preset's not calibrated yet),
    saying so."""
    if gpu.id == "illustrative":
        raise InputError("the calibrated mode models real kernels on a real GPU, and the "
                         "illustrative GPU's figures are already round sustained numbers; "
                         "pick a real GPU preset (e.g. a100-80gb)")
    cal = BY_ARCHITECTURE.get(gpu.architecture, FALLBACK)
    if cal is not A100:   # the measured chip's provenance is the fit; the others name the GPU
        cal = replace(cal, provenance=cal.provenance.format(
            gpu=gpu.name, architecture=gpu.architecture or "not given"))
    if gpu.gemm_tile is not None:
        cal = replace(cal, gemm_tile=checked_tile(gpu.gemm_tile, gpu.name),
                      provenance=f"{cal.provenance}; GEMM tile of {gpu.gemm_tile} token rows "
                                 "given for this GPU")
    return cal


def calibrated_tile(gpu: Gpu) -> int:
    """The tile the calibrated mode would use on `gpu`: its own, else its family's (the A100
    fit's 64 rows for every GPU so far), also for the illustrative GPU the mode refuses, so an
    ideal mode can say what it leaves out."""
    if gpu.gemm_tile is not None:
        return checked_tile(gpu.gemm_tile, gpu.name)
    return BY_ARCHITECTURE.get(gpu.architecture, FALLBACK).gemm_tile


# --- explaining a calibrated time -----------------------------------------------------------------
@dataclass(frozen=True)
class Factor:
    """One step from the ideal roofline to the calibrated time: its name, the time it adds, why."""

    name: str
    added_s: float
    why: str


def explain(cost, parts, tokens: float, rows: int) -> tuple[Factor, ...]:
    """Walk from the roofline (no overhead) to the calibrated time of `cost` (a calibrated
    CostModel), switching factors on one at a time; each step's added time is >= 0 and they sum to
    calibrated time - roofline time."""
    cal, m = cost.calibration, cost.model
    roofline = max(cost.roofline_time(sum(p[0] for p in parts), sum(p[1] for p in parts)))
    off = dict(achievable=False, soft=False, floor=False)
    rules = factor_rules(cal)
    kernels = sum(k for k, p in zip(cost.kernels, parts) if p[0] or p[1])
    here = {
        "tile quantization": f"{tokens:,.0f} tokens cost the FLOPs of "
                             f"{cal.padded_tokens(tokens):,.0f}",
        "kernel floors": f"{kernels:,} kernels × {cal.kernel_floor_s * 1e6:.3g} µs = "
                         f"{fmt_seconds(kernels * cal.kernel_floor_s)}",
        "all-reduce": f"{2 * m.layers} all-reduces over {cost.tp} GPUs, which the roofline "
                      "already counts at the full link bandwidth",
    }
    engine, cpu_s = cost.engine, cost.overhead_s
    gpu_s = cost.calibrated_time(parts, tokens, rows)[2] + cost.allreduce_time(tokens, True)
    added_s = engine.added_s(gpu_s, cpu_s)
    here["per-iteration overhead"] = (
        f"{fmt_seconds(cpu_s)} of CPU{', as set' if cost.overhead_set_s is not None else ''}, "
        f"{engine.kind} ({engine.release}): {engine.rule} adds {fmt_seconds(added_s)} to the "
        f"{fmt_seconds(gpu_s)} on the GPU")

    def factor(name: str, added_s: float) -> Factor:
        return Factor(name, added_s, rules[name] + (f"; here {here[name]}" if name in here else ""))

    stages = [("kernels in sequence", dict(tiles=False, **off)), ("tile quantization", off),
              ("achievable throughput", dict(soft=False, floor=False)),
              ("soft ridge", dict(floor=False)), ("kernel floors", {})]
    factors, before = [], roofline
    for name, flags in stages:
        after = cost.calibrated_time(parts, tokens, rows, **flags)[2]
        added = after - before
        factors.append(factor(name, 0.0 if abs(added) <= 1e-9 * after else added))  # rounding
        before = after
    if cost.tp > 1:
        factors.append(factor("all-reduce", cost.allreduce_time(tokens, True)
                              - cost.allreduce_time(tokens, False)))
    factors.append(factor("per-iteration overhead", added_s))
    return tuple(factors)
