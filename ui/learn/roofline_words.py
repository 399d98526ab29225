"""The Roofline page's opening paragraph, its claim on the decode step chosen by the regime the
priced step is in (memory-bound below the ridge, compute-bound above it): at 512 streams a decode
step is no longer low intensity, and the GPU has no compute to spare. Pure Python (no Streamlit)."""

from __future__ import annotations

from sim.cost.iteration import CostModel
from sim.studies.budget import scenario_iterations
from sim.units import fmt_counted

from ..shell.glossary import first, term


def roofline_intro(cost: CostModel, decodes: int, context: int, prompt: int, budget: int,
                   model_name: str, mode: str, tp: int) -> str:
    """The paragraph (Markdown with glossary marks): the roofline, the ridge, then what the
    scenario's decode step is, read off its priced iteration (its bound, as the page's table
    gives it)."""
    gpu = cost.gpu
    ridge = gpu.ridge_flops_per_byte
    decode = next((it.cost for it in scenario_iterations(cost, decodes, context, prompt, budget)
                   if it.key == "decode"), None)
    if decode is None:
        step = ("No stream is running, so there is no decode step here; a prompt chunk reuses "
                "each weight for every token in it: high intensity.")
    elif decode.bound == "memory":
        step = (f"A decode step reads all the weights for one token per stream: with "
                f"{fmt_counted(decodes, 'stream')} that is {decode.intensity:,.4g} FLOP/B, "
                "memory-bound (low intensity). A prompt chunk reuses each weight for "
                "every token in it: high intensity. Fusing them puts the decodes' work where the "
                "GPU has compute to spare.")
    else:
        step = (f"A decode step reads all the weights for one token per stream: with {decodes:,} "
                f"streams that is {decode.intensity:,.4g} FLOP/B: the decode step is already "
                "compute-bound. The GPU has no compute to spare for a "
                "chunk fused with it: every prompt token adds its full arithmetic to the step.")
    question = ("Why is a decode step cheap and a long prompt expensive?"
                if decode is None or decode.bound == "memory" else
                f"When is a decode step cheap, and why is one of {decodes:,} streams not?")
    return (f"{question} The {term('roofline')} answers it. A pass runs at min(peak, "
            "bandwidth × intensity), where intensity = "
            f"{first('flop')} / bytes moved. Below the **ridge** = peak / bandwidth = "
            f"{gpu.peak_flops / 1e12:,.4g} TFLOP/s / {gpu.bandwidth / 1e12:,.4g} TB/s = "
            f"**{ridge:,.4g} FLOP/B** it is memory-bound (waiting for bytes), above it "
            f"compute-bound. {step} {model_name}, {mode} cost mode"
            + (f", over {tp} GPUs (tensor parallel): every number here is one GPU's, and the roof "
               "is one GPU's." if tp > 1 else "."))
