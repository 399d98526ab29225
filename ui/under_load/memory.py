"""The Memory page's figure: the KV cache each policy holds over a workload's run, against the
capacity; and, with pipeline stages, each stage's weights and KV."""

from __future__ import annotations

from charts import memory as memory_charts
from charts.figure import Figure
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.presets.hardware import Gpu
from sim.presets.links import FREE_LINK
from sim.presets.models import Model
from sim.serving.engine import Trace
from sim.serving.pipeline import make_pipeline, stage_costs
from sim.serving.policies import PolicySpec
from sim.studies.memory import kv_capacity
from sim.units import fmt_bytes

from ..shell.cached_figure import cached_figure


@cached_figure()
def kv(key: tuple[str, ...], kv_bytes_per_token: float, look: Look, width: int,
       _traces: dict[str, Trace]) -> Figure:
    """KV in use over time under each policy against its own capacity (time bins on long runs,
    each keeping its peak), keyed on the runs (ui.under_load.traffic.Served.key)."""
    return memory_charts.kv_chart(memory_charts.kv_frame(_traces, kv_bytes_per_token), look,
                                  width=width)


def stage_rows(cost: CostModel, gpu: Gpu, model: Model, stages: int, policy: PolicySpec,
               budget: int) -> tuple[list[dict[str, str]], int, int]:
    """Each pipeline stage as `policy`'s engine sizes it (its layers, its weights and KV bytes
    per token per GPU, the KV tokens it fits beside them: sim.studies.memory.kv_capacity on the
    stage's cost model), the KV tokens the pipeline holds (the fewest any stage fits, each
    token's KV being on every stage) and those one GPU group holds with the whole model (0 where
    it does not fit). An InputError where there are more `stages` than layers."""
    pipeline = make_pipeline(model, gpu, stages, link=FREE_LINK.id if stages > 1 else None)
    rows, held = [], []
    for s, (layers, c) in enumerate(zip(pipeline.layers, stage_costs(cost, pipeline))):
        capacity = kv_capacity(c, policy, budget)
        held.append(int(capacity.tokens.value))
        rows.append({"stage": f"{s + 1}", "layers": f"{layers}",
                     "weights per GPU": fmt_bytes(c.weight_bytes),
                     "KV bytes per token": fmt_bytes(c.kv_bytes_per_token),
                     f"KV capacity under {policy.engine} = memory × (1 − kept back) − weights":
                         f"{capacity.bytes.substituted} = {capacity.bytes.display}",
                     "in tokens": capacity.tokens.display if capacity.fits else
                     capacity.tokens.substituted})
    return rows, min(held), int(kv_capacity(cost, policy, budget).tokens.value)


def stages_words(stages: int, tp: int, policy: PolicySpec, held: int, alone: int) -> str:
    """What splitting the layers does to the KV the engine holds."""
    lead = (f"Split over {stages} pipeline stages (the Pipeline page), each on {tp} "
            f"GPU{'s' * (tp > 1)}, a stage holds its layers' share of the weights and of every "
            "token's KV. Each token's KV is on every stage, so the pipeline holds the fewest any "
            f"stage fits: {held:,} tokens under {policy.engine}")
    if not alone:
        return f"{lead}, where one GPU{' group' * (tp > 1)} with the whole model fits none."
    return (f"{lead}, against {alone:,} on one GPU{' group' * (tp > 1)} with the whole model "
            "(the table above).")
