"""The Roofline page's words: its opening paragraph, its claim on the decode step chosen by the
regime the priced step is in (memory-bound below the ridge, compute-bound above it): at 512 streams
a decode step is no longer low intensity, and the GPU has no compute to spare; and what GEMM tiles
make of a budget (the calibrated mode rounds an iteration's tokens up to whole tiles; the ideal
modes have none). Pure Python (no Streamlit)."""

from __future__ import annotations

from sim.cost.calibration import calibrated_tile, padded_rows
from sim.cost.iteration import CostModel
from sim.cost.tiles import tile_multiples, tiled
from sim.studies.budget import fused_iteration, scenario_iterations
from sim.units import fmt_counted, fmt_percent, fmt_seconds

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


def tiles_heading(cost: CostModel) -> str:
    """The tile section's title: the question it answers in the calibrated mode, or that the
    mode has none."""
    if cost.gemm_tile is None:
        return f"Tiles: none in the {cost.mode} mode"
    return f"Tiles: why budgets come in multiples of {cost.gemm_tile}"


def tiles_words(cost: CostModel, decodes: int, context: int, prompt: int, budget: int,
                largest: int | None, tpot_s: float) -> str:
    """What GEMM tiles make of the budgets the page names (Markdown): in the calibrated mode the
    rows each budget's iteration computes, the empty ones and their share of its time, and the
    whole tiles beside a ragged budget against the TPOT target; in the ideal modes, that they
    have no tiles and what the calibrated mode would round."""
    tile = cost.gemm_tile
    if tile is None:
        would = calibrated_tile(cost.gpu)
        return (f"The {cost.mode} mode has no tiles: it prices every token alike, so its curve "
                f"climbs without steps and a budget that is not a multiple of {would} wastes "
                f"nothing here. The calibrated mode runs each {first('gemm')} in whole tiles of "
                f"{would} token rows (fitted on one A100, used for every GPU): there, 257 tokens "
                f"cost about what {padded_rows(257, would):,.0f} do (*Cost mode* in the sidebar, "
                "on a real GPU).")
    named = {"Largest budget within the target": largest, "Your budget": budget}
    out = [f"The calibrated mode runs each {first('gemm')} over an iteration's tokens "
           f"(decodes and chunk together) in whole tiles of {tile} rows, a tile being the block "
           f"of rows one kernel step computes: rows = ⌈tokens / {tile}⌉ × {tile}, the tokens "
           f"rounded up to a multiple of {tile}. So its time climbs in steps: one token past a "
           "whole tile starts a new one (the chart below)."]
    seen = set()
    for kind, b in named.items():
        if b is None or b in seen:
            continue
        seen.add(b)
        out.append(_budget_tiles(cost, kind, decodes, context, prompt, b, tpot_s))
    return "\n".join([out[0], ""] + [f"- {line}" for line in out[1:] if line])


def _budget_tiles(cost: CostModel, kind: str, decodes: int, context: int, prompt: int,
                  budget: int, tpot_s: float) -> str:
    """One budget's rows in words: whole tiles, or the rows it computes, the empty ones, their
    time, and the whole tiles beside it."""
    if budget <= decodes:   # no chunk: the page says so beside its chunk and fused points
        return ""
    it = tiled(cost, fused_iteration(decodes, context, prompt, budget))
    held = (f"{kind}, {budget:,}," if it.tokens == budget else
            f"{kind}, {budget:,}, holds the decodes and the whole prompt ({it.tokens:,} tokens); "
            "it")
    tile = it.tile_here
    if not it.wasted_rows:
        return (f"{held} fills {fmt_counted(it.rows // tile, 'whole tile')} of {tile} rows: no "
                "row is empty.")
    text = (f"{held} computes ⌈{it.tokens:,} / {tile}⌉ × {tile} = **{it.rows:,} rows**, "
            f"{it.wasted_rows:,} of them empty: {fmt_seconds(it.wasted_s)} of its "
            f"{fmt_seconds(it.time_s)} iteration ({fmt_percent(it.wasted_share)}).")
    if it.tokens != budget or it.tokens < cost.gemm_tile:
        return text
    beside = []
    for b in dict.fromkeys(tile_multiples(it.tokens, tile)):
        if b <= decodes or b > decodes + prompt:
            continue
        t = tiled(cost, fused_iteration(decodes, context, prompt, b)).time_s
        beside.append(f"{b:,} ({fmt_seconds(t)}, {'within' if t <= tpot_s else 'over'} the "
                      "target)")
    if beside:
        text += " The whole tiles beside it: " + " and ".join(beside) + ", with no empty row."
    return text
