"""GPU presets: dense peak compute, memory bandwidth and capacity, each with its source.

Every number is a *dense* tensor-core peak: several public tools ship the "with sparsity" figure,
which is twice the dense one. Each preset's `source` names its datasheet or public table; their
addresses are in docs/sources.md ("GPU datasheets and public GPU tables").
Units are SI: FLOP/s, bytes/s, bytes. Datasheet "GB" and "TB/s" are decimal (1e9, 1e12).

Memory is the total the device reports (`REPORTED_MIB`), not the datasheet's round figure: the
engines size their KV cache from what CUDA reports (vLLM through torch, SGLang reads nvidia-smi's
MiB), and an "80 GB" H100 reports 81,559 MiB = 85.5 GB. The datasheet figure is kept beside it
(`Gpu.datasheet_bytes`) for the captions that name the part.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.errors import InputError, check_number

GB = 1e9
TB = 1e12
TFLOPS = 1e12


@dataclass(frozen=True)
class Gpu:
    """One accelerator. Frozen, so it can key a cache."""

    id: str
    name: str
    peak_flops: float          # dense BF16 tensor-core FLOP/s
    bandwidth: float           # HBM / GDDR bytes/s
    memory_bytes: float        # device memory, bytes
    source: str
    interconnect_bandwidth: float = 0.0   # per-GPU all-reduce bandwidth, bytes/s (0: none)
    # the chip family ("Hopper"): the calibrated mode's kernels follow it (sim/cost/calibration.py)
    architecture: str = ""
    # token rows per GEMM tile where this GPU's kernels are known to differ from its family's
    # calibration (None: the family's; sim/cost/calibration.py `calibration_for`)
    gemm_tile: int | None = None
    # the datasheet's round figure ("80 GB"), for captions; the KV cache is sized from memory_bytes
    datasheet_bytes: float = 0.0
    memory_source: str = ""    # where memory_bytes is read from ("estimated" where no device's is)

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity at which a kernel turns from memory- to compute-bound."""
        return self.peak_flops / self.bandwidth


MIB = 2**20

# What each device reports as its total memory, MiB: nvidia-smi's "Memory-Usage" total (the figure
# SGLang reads for its tiers; CUDA's own total, which torch and vLLM read, is a few hundred MiB
# less, kept by the driver), rocminfo's pool size for the MI300X. Those not read off a device are
# marked "estimated".
REPORTED_MIB: dict[str, tuple[float, str]] = {
    "a100-40gb": (40960, "nvidia-smi's total (modal-labs/modal-client#2797)"),
    "a100-80gb": (81920, "nvidia-smi's total (modal-labs/modal-client#2797)"),
    "h100-sxm": (81559, "nvidia-smi's total (NVIDIA/nccl#1264; modal-labs/modal-client#2797)"),
    "h200": (143771, "nvidia-smi's total (public nvidia-smi output of H200 SXM nodes)"),
    "l4": (23034, "nvidia-smi's total (modal-labs/modal-client#2797)"),
    "l40s": (46068, "nvidia-smi's total (modal-labs/modal-client#2797)"),
    "rtx-4090": (24564, "nvidia-smi's total (vllm-project/vllm#7553)"),
    "mi300x": (201310208 / 1024, "rocminfo's pool, 201,310,208 × 2¹⁰ B (ROCm/legacy-rocm-build#4414)"),
    "b200": (183359, "nvidia-smi's total (NVIDIA/TensorRT-LLM#10278)"),
    "a100-pcie-40gb": (40960, "estimated: the A100 40GB SXM's, the same 40 GB of HBM2"),
    "a100-pcie-80gb": (81920, "estimated: the A100 80GB SXM's, the same 80 GB of HBM2e"),
}


def _gpu(id, name, tflops, gbps, mem_gb, source, link_gbps=0.0, architecture="") -> Gpu:
    """A preset from its datasheet's figures, its memory the device's own (`REPORTED_MIB`; the
    datasheet's where no device reports one, as for the textbook GPU, which is not a part)."""
    mib, memory_source = REPORTED_MIB.get(id, (mem_gb * GB / MIB, f"the datasheet's {mem_gb:g} GB"))
    return Gpu(id, name, tflops * TFLOPS, gbps * GB, mib * MIB, source, link_gbps * GB,
               architecture, datasheet_bytes=mem_gb * GB, memory_source=memory_source)


# GPU-to-GPU links for tensor parallelism, GB/s in ONE direction per GPU: what a ring all-reduce
# streams through (nccl-tests' "busbw" tops out near it). Datasheets quote both directions added:
NVLINK3 = 300   # A100 SXM: NVLink 3, 12 links, "600 GB/s" bidirectional (NVIDIA A100 datasheet)
NVLINK4 = 450   # H100/H200 SXM: NVLink 4, 18 links, "900 GB/s" (H100/H200 datasheets; "NVLink4
#                 unidirectional bandwidth is 450 GB/s", NVIDIA/nccl#1374)
NVLINK5 = 900   # B200: NVLink 5, "1.8 TB/s" bidirectional per GPU (NVIDIA HGX B200 datasheet)
PCIE4_X16 = 32  # L4, L40S, RTX 4090: no NVLink; PCIe Gen4 x16 is "64 GB/s" bidirectional (L4 and
#                 L40S datasheets). GeForce cards also lack peer-to-peer, so real rings are slower.
NVLINK3_BRIDGE = 300   # A100 PCIe: an NVLink Bridge joins two cards, "600 GB/s" bidirectional
#                 (NVIDIA A100 datasheet); pairs only, so TP beyond 2 would cross PCIe Gen4 (32 GB/s)
INFINITY_FABRIC = 448  # MI300X: 7 Infinity Fabric links x 128 GB/s bidirectional = 896 GB/s
#                 aggregate (AMD); a direct mesh: only 8 GPUs use all 7 links, optimistic for TP < 8


GPUS: dict[str, Gpu] = {g.id: g for g in (
    _gpu("illustrative", "Textbook GPU (400 TFLOP/s, 3 TB/s)", 400, 3000, 80,
         "the source articles' worked example: round sustained figures, not a real part"),
    _gpu("a100-40gb", "A100 40GB SXM", 312, 1555, 40,
         "NVIDIA A100 datasheet; llm-analysis a100-sxm-40gb.json", NVLINK3, "Ampere"),
    _gpu("a100-80gb", "A100 80GB SXM", 312, 2039, 80,
         "ai-dynamo/aiconfigurator systems/a100_sxm.yaml", NVLINK3, "Ampere"),
    _gpu("h100-sxm", "H100 SXM", 989, 3350, 80,
         "aiconfigurator h100_sxm.yaml; NVIDIA H100 datasheet (sparsity figures are 2x)", NVLINK4,
         "Hopper"),
    _gpu("h200", "H200 SXM", 989, 4800, 141, "aiconfigurator h200_sxm.yaml", NVLINK4, "Hopper"),
    _gpu("l4", "L4", 121, 300, 24,
         "aiconfigurator l4.yaml ('dense; NVIDIA specs list 242 TFLOPS with sparsity')", PCIE4_X16,
         "Ada Lovelace"),
    _gpu("l40s", "L40S", 362, 864, 48, "aiconfigurator l40s.yaml", PCIE4_X16, "Ada Lovelace"),
    _gpu("rtx-4090", "RTX 4090", 165, 1008, 24,
         "Ada whitepaper via secondary sources (BF16, FP32 accumulate); measured ~165 TFLOP/s",
         PCIE4_X16, "Ada Lovelace"),
    _gpu("mi300x", "MI300X", 1307, 5300, 192,
         "AMD MI300X data sheet, as cited in GenZ Systems/system_configs.py", INFINITY_FABRIC,
         "CDNA 3"),
    _gpu("b200", "B200 (HGX, 1000 W)", 2250, 7700, 180, "aiconfigurator b200_sxm.yaml", NVLINK5,
         "Blackwell"),
    # Sarathi-Serve's testbed: A100 80GB PCIe cards joined in pairs by NVLink bridges (Azure
    # NC96ads v4; its artifact's osdi-experiments READMEs). Same GA100 chip and peak as the SXM
    # parts, less bandwidth on the 80 GB card.
    _gpu("a100-pcie-40gb", "A100 40GB PCIe", 312, 1555, 40,
         "NVIDIA A100 datasheet and A100 40GB PCIe product brief (PB-10137-001)", NVLINK3_BRIDGE,
         "Ampere"),
    _gpu("a100-pcie-80gb", "A100 80GB PCIe", 312, 1935, 80,
         "NVIDIA A100 datasheet (A100 80GB PCIe: 1,935 GB/s)", NVLINK3_BRIDGE, "Ampere"),
)}


def get_gpu(gpu_id: str) -> Gpu:
    try:
        return GPUS[gpu_id]
    except KeyError:
        raise InputError(f"unknown GPU {gpu_id!r}; choose one of {', '.join(GPUS)}") from None


def custom_gpu(peak_tflops: float, bandwidth_tbps: float, memory_gb: float,
               name: str = "Custom GPU", link_gbps: float = 0.0) -> Gpu:
    """A GPU from plain datasheet fields (dense TFLOP/s, TB/s, GB; GPU-to-GPU GB/s one way)."""
    # lower ends keep every time finite (a 1e-300 TFLOP/s GPU would price iterations at inf)
    tflops = check_number("peak TFLOP/s", peak_tflops, low=1e-3, low_inclusive=True, high=1e5)
    tbps = check_number("bandwidth TB/s", bandwidth_tbps, low=1e-6, low_inclusive=True, high=1e3)
    mem = check_number("memory GB", memory_gb, low=1e-3, low_inclusive=True, high=1e5)
    link = check_number("GPU-to-GPU link GB/s", link_gbps, low=0, low_inclusive=True, high=1e5)
    return Gpu("custom", name, tflops * TFLOPS, tbps * TB, mem * GB, "user-supplied fields",
               link * GB, datasheet_bytes=mem * GB, memory_source=f"{mem:g} GB as typed")


# --- what the engines read off the device to pick their defaults ------------------------------
GIB = 2**30


def memory_gib(gpu: Gpu) -> float:
    """Device memory in GiB (2³⁰ B), the unit the engines' tier thresholds are written in
    (vLLM compares bytes with `70 * GiB_bytes`, SGLang MiB with `35 * 1024`), of the memory the
    device reports: an "80 GB" H100 is 79.6 GiB."""
    return gpu.memory_bytes / GIB


def tier_of(gpu: Gpu, tiers: tuple[tuple[float, object], ...], above: object) -> object:
    """The value of the first of `tiers` ((GiB limit, value), ascending) whose limit the GPU's
    memory is below; `above` when none is."""
    gib = memory_gib(gpu)
    return next((value for limit, value in tiers if gib < limit), above)


def is_a100(gpu: Gpu) -> bool:
    """vLLM keeps A100s on its small tier by name ("a100" in the device name, PR #17885)."""
    return "a100" in gpu.name.lower()
