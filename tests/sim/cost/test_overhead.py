"""The per-iteration CPU overhead, engine by engine (sim/cost/overhead.py): one test per rule, each
citing the release it is read from (docs/sources.md, "Per-iteration CPU overhead"). Each runs the
engine on the worked example's scenario in the calibrated mode on an H100 (decode step 18.44 ms on
the GPU, 4 ms of CPU) and reads the iterations' durations, so it fails on a cost model that adds
the 4 ms to every engine, or hides it for every engine."""

import json
import re
from pathlib import Path

import pytest

from sim.cost.iteration import Composition, CostModel
from sim.cost.overhead import MEASURED_CPU_S
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import POLICIES, Limits, get_policy, lane_budget
from sim.serving.workloads import textbook_scenario
from tests.support.cli import cli

H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "calibrated")
DECODE_ONLY = Composition((4000,) * 64)
# the 64 streams' last 4 decode steps, then the prompt alone (it arrives after they finish)
WORKLOAD = textbook_scenario(decode_output=4, arrival_s=1.0)


def gpu_time(composition: Composition) -> float:
    """The iteration's time on the GPU alone: priced with no CPU overhead."""
    return H100.with_overhead(0.0).price(composition).time_s


def first_decode_step(policy: str, cost: CostModel = H100) -> tuple[float, float]:
    """(duration, overhead the trace records) of the run's first iteration: the 64 streams'
    decode step, the same composition as DECODE_ONLY."""
    spec = get_policy(policy)
    trace = simulate(WORKLOAD, spec, cost, budget=lane_budget(spec, WORKLOAD, 576),
                     limits=Limits(max_seqs=65))
    assert trace.decode_tokens[0] == 64 and trace.prefill_tokens[0] == 0
    return float(trace.duration_s[0]), float(trace.overhead_s[0])


def test_the_decode_step_of_the_example_takes_18_ms_on_the_gpu():
    assert gpu_time(DECODE_ONLY) == pytest.approx(18.44e-3, abs=0.01e-3)


@pytest.mark.parametrize("policy", ["vllm-v0", "sarathi", "orca"])
def test_a_synchronous_engine_adds_its_cpu_time_to_the_gpu_step(policy):
    """The Sarathi-Serve artifact's `BaseLLMEngine.step` (osdi-sarathi-serve,
    sarathi/engine/base_llm_engine.py:360-389) schedules, runs the workers, then processes their
    output, one after another; vLLM V0 and Orca run as schedulers inside it: GPU + CPU."""
    duration, overhead = first_decode_step(policy)
    assert overhead == MEASURED_CPU_S
    assert duration == pytest.approx(gpu_time(DECODE_ONLY) + MEASURED_CPU_S, rel=1e-12)


def test_vllm_v1_hides_its_cpu_time_behind_a_longer_gpu_step():
    """vLLM 0.33.0: `async_scheduling` defaults to None (vllm/config/scheduler.py:211), which
    `VllmConfig` turns on unless an option rules it out (vllm/config/vllm.py:1685-1719): the next
    step is scheduled while the GPU runs this one, max(GPU, CPU)."""
    duration, overhead = first_decode_step("vllm-v1")
    assert overhead == 0.0
    assert duration == pytest.approx(gpu_time(DECODE_ONLY), rel=1e-12)


def test_sglang_hides_its_cpu_time_behind_a_longer_gpu_step():
    """SGLang 0.5.23: `disable_overlap_schedule = False`
    (python/sglang/srt/arg_groups/fields/schedule.py:193-199), so the scheduler runs
    `event_loop_overlap` (python/sglang/srt/managers/scheduler.py:500-502, 2061)."""
    duration, overhead = first_decode_step("sglang")
    assert overhead == 0.0
    assert duration == pytest.approx(gpu_time(DECODE_ONLY), rel=1e-12)


@pytest.mark.parametrize("policy", ["vllm-v1", "sglang"])
def test_an_overlapped_engines_cpu_time_shows_where_it_is_longer_than_the_gpu_step(policy):
    """max(GPU, CPU), not GPU alone: 30 ms of CPU against the 18.44 ms decode step make a 30 ms
    iteration, 11.56 ms of it overhead."""
    duration, overhead = first_decode_step(policy, H100.with_overhead(30e-3))
    assert duration == pytest.approx(30e-3, rel=1e-12)
    assert overhead == pytest.approx(30e-3 - gpu_time(DECODE_ONLY), rel=1e-9)


@pytest.mark.parametrize("policy", ["vllm-v1", "vllm-v0"])
def test_a_set_overhead_replaces_the_amount_and_keeps_the_engines_rule(policy):
    """`--overhead-ms` sets the CPU time; whether it hides stays the engine's."""
    cost = H100.with_overhead(10e-3)
    duration, _ = first_decode_step(policy, cost)
    gpu = gpu_time(DECODE_ONLY)
    assert duration == pytest.approx(gpu + 10e-3 if policy == "vllm-v0" else gpu, rel=1e-12)


@pytest.mark.parametrize("mode", ["simple", "roofline"])
def test_the_ideal_modes_leave_the_overhead_out_unless_it_is_set(mode):
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), mode)
    for policy in POLICIES.values():
        assert cost.for_engine(policy.overhead).overhead_s == 0.0


def test_the_cost_command_prices_the_example_on_each_engines_loop(capsys):
    """`cost --mode calibrated --gpu h100-sxm --model llama-3.1-8b --decodes 64 --context 4000`:
    4 ms is 18% of the 22.44 ms step on vLLM V0's loop; on vLLM V1's it hides (18.44 ms)."""
    args = "cost --mode calibrated --gpu h100-sxm --model llama-3.1-8b --decodes 64 --context 4000"
    v0 = json.loads(cli(*args.split(), "--json", capsys=capsys)[1])
    v1 = json.loads(cli(*args.split(), "--policy", "vllm-v1", "--json", capsys=capsys)[1])
    assert v0["time_s"] == pytest.approx(22.44e-3, abs=0.01e-3) and v0["overhead_s"] == 4e-3
    assert v0["engine"]["rule"] == "GPU + CPU"
    assert v1["time_s"] == pytest.approx(18.44e-3, abs=0.01e-3) and v1["overhead_s"] == 0.0
    assert v1["engine"] | {"cpu_s": None} == {"policy": "vllm-v1", "release": "vLLM 0.33.0",
                                               "cpu_s": None, "overlapped": True,
                                               "rule": "max(GPU, CPU)"}


def test_every_engines_rule_is_cited_at_its_release_in_the_code_and_in_the_sources():
    """Each policy's overhead names its release and a public file at a tag or the artifact's
    branch, with lines; docs/sources.md lists the same addresses."""
    sources = (Path(__file__).parents[3] / "docs" / "sources.md").read_text()
    for policy in POLICIES.values():
        address = policy.overhead.rule_source
        assert re.fullmatch(r"https://github\.com/[\w-]+/[\w-]+/blob/(v[\d.]+|osdi-sarathi-serve)/"
                            r"\S+\.py#L\d+-L\d+", address), policy.name
        assert address in sources, policy.name
        assert policy.overhead.amount_source in sources
