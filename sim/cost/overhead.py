"""The per-iteration CPU overhead, engine by engine: how much, and whether it hides.

Between two forward passes a server schedules, prepares the next batch's inputs and processes the
sampled tokens on the CPU. How that work adds to an iteration depends on the engine's loop:

- **synchronous** (vLLM V0, and the Sarathi-Serve artifact that runs Sarathi-Serve, its vLLM
  baseline and its Orca baseline in one engine loop): schedule, run the model, process the output,
  one after another; the GPU idles while the CPU works, so

      iteration = GPU time + CPU time

- **overlapped** (vLLM V1 with async scheduling, on by default; SGLang's overlap scheduler, on by
  default): the CPU prepares step n + 1 while the GPU runs step n, so the CPU time shows only where
  it is longer than the GPU step:

      iteration = max(GPU time, CPU time)

The CPU time itself is the one published profile at hand, vLLM V0's ~4 ms per decode step
(vllm-project/vllm#6854); no release at hand measures its own, so every engine is given that
figure and differs only in whether it hides. `--overhead-ms` replaces the amount, never the rule.
The cost model applies it in the calibrated mode; the ideal modes (simple, roofline) leave it out
unless it is set. Sources: docs/sources.md, "Per-iteration CPU overhead".
"""

from __future__ import annotations

from dataclasses import dataclass

# vllm-project/vllm#6854 (multi-step scheduling RFC): vLLM V0 profiles show ~4 ms of GPU idle per
# decode step while the CPU schedules, prepares inputs and processes samples.
MEASURED_CPU_S = 4e-3
MEASURED_CPU_SOURCE = "https://github.com/vllm-project/vllm/issues/6854"


@dataclass(frozen=True)
class Overhead:
    """One engine's per-iteration CPU work: its time in the calibrated mode, whether its loop
    overlaps it with the GPU step, and where each is read."""

    cpu_s: float          # CPU time per iteration (scheduling, input preparation, sampling)
    overlapped: bool      # the CPU prepares the next step while the GPU runs this one
    release: str          # the engine release the rule is read from
    rule_source: str      # file and lines at that release (public address) that set the loop
    amount_source: str = MEASURED_CPU_SOURCE

    @property
    def rule(self) -> str:
        """How the CPU time combines with the GPU time, as a formula."""
        return "max(GPU, CPU)" if self.overlapped else "GPU + CPU"

    @property
    def kind(self) -> str:
        return "overlapped" if self.overlapped else "synchronous"

    def added_s(self, gpu_s: float, cpu_s: float) -> float:
        """The time the CPU adds to an iteration whose GPU work takes `gpu_s`."""
        if self.overlapped:
            return cpu_s - gpu_s if cpu_s > gpu_s else 0.0
        return cpu_s


# vLLM V1, release v0.33.0: `async_scheduling` defaults to None (vllm/config/scheduler.py:211),
# which VllmConfig turns on unless an option rules it out (vllm/config/vllm.py:1685-1719).
VLLM_V1 = Overhead(
    MEASURED_CPU_S, overlapped=True, release="vLLM 0.33.0",
    rule_source="https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/vllm.py#L1685-L1719")
# SGLang, release v0.5.23: `disable_overlap_schedule = False`
# (python/sglang/srt/arg_groups/fields/schedule.py:193-199), so the scheduler runs
# `event_loop_overlap` (python/sglang/srt/managers/scheduler.py:500-502, 2061).
SGLANG = Overhead(
    MEASURED_CPU_S, overlapped=True, release="SGLang 0.5.23",
    rule_source="https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/arg_groups/"
                "fields/schedule.py#L193-L199")
# The Sarathi-Serve OSDI'24 artifact (branch osdi-sarathi-serve): `BaseLLMEngine.step` schedules,
# runs the workers and processes their output one after another
# (sarathi/engine/base_llm_engine.py:360-389); its vLLM (V0) and Orca baselines are schedulers
# inside the same engine, and vLLM V0's own loop is the one the 4 ms profile was taken on.
ARTIFACT_LOOP = ("https://github.com/microsoft/sarathi-serve/blob/osdi-sarathi-serve/sarathi/"
                 "engine/base_llm_engine.py#L360-L389")
SARATHI_SERVE = Overhead(MEASURED_CPU_S, overlapped=False,
                         release="the Sarathi-Serve OSDI'24 artifact", rule_source=ARTIFACT_LOOP)
VLLM_V0 = Overhead(MEASURED_CPU_S, overlapped=False,
                   release="the Sarathi-Serve artifact's vLLM V0 baseline",
                   rule_source=ARTIFACT_LOOP)
ORCA = Overhead(MEASURED_CPU_S, overlapped=False,
                release="the Sarathi-Serve artifact's Orca baseline", rule_source=ARTIFACT_LOOP)

