"""The cost of one iteration: the source articles' arithmetic in simple mode, the full count in roofline."""

import numpy as np
import pytest

from sim.cost.iteration import Chunk, Composition, CostModel, attended_pairs
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model

ILLUSTRATIVE = get_gpu("illustrative")
DENSE_8B = get_model("dense-8b")


def simple():
    return CostModel(ILLUSTRATIVE, DENSE_8B, "simple")


def roofline(model="dense-8b", gpu="illustrative"):
    return CostModel(get_gpu(gpu), get_model(model), "roofline")


def test_simple_decode_step_is_weight_read():
    c = simple().price(Composition((4000,) * 64))
    assert c.time_s == pytest.approx(16e9 / 3e12)           # 5.33 ms
    assert c.compute_s == pytest.approx(64 * 16e9 / 400e12)  # 2.56 ms
    assert c.bound == "memory"


def test_simple_whole_prompt_and_chunk():
    assert simple().price(Composition((), (Chunk(8192),))).time_s == pytest.approx(0.32768)
    fused = simple().price(Composition((0,) * 64, (Chunk(512),)))
    assert fused.time_s == pytest.approx(0.02304)
    assert fused.bound == "compute"


def test_combining_rule_is_max_plus_overhead():
    cm = CostModel(ILLUSTRATIVE, DENSE_8B, "roofline", overhead_s=0.002)
    c = cm.price(Composition((1000,) * 8, (Chunk(300, 100, True),)))
    assert c.time_s == pytest.approx(max(c.flops / 400e12, c.bytes / 3e12) + 0.002)
    assert c.flops == pytest.approx(sum(v.flops for v in c.components.values()))
    assert c.bytes == pytest.approx(sum(v.bytes for v in c.components.values()))


def test_roofline_linear_flops_and_weights():
    m = get_model("llama-3.1-8b")
    c = roofline("llama-3.1-8b").price(Composition((0,) * 10))
    layer_params = 32 * m.layer_params
    assert c.components["linear"].flops == pytest.approx(2 * layer_params * 10)
    # weights are read once per iteration, shared by every row: nine more rows add only their
    # activations, well under 1% of the weights
    one_row = roofline("llama-3.1-8b").price(Composition((0,))).components["linear"].bytes
    assert layer_params * 2 < one_row
    assert 0 < c.components["linear"].bytes - one_row < 0.01 * layer_params * 2


def test_decode_bytes_include_weights_and_kv():
    # A known bug: a decode step's bytes without the weights. Both must be there.
    m = get_model("llama-3.1-8b")
    c = roofline("llama-3.1-8b").price(Composition((4000,) * 64))
    assert c.bytes > m.weight_bytes * 0.9 + 64 * 4000 * m.kv_bytes_per_token
    assert c.bound == "memory"


def test_attention_is_causal_inside_a_chunk():
    m = get_model("llama-3.1-8b")
    c = roofline("llama-3.1-8b").price(Composition((), (Chunk(512, 1024),)))
    pairs = 512 * 1024 + 512 * 513 / 2
    assert c.components["attention"].flops == pytest.approx(4 * m.q_dim * 32 * pairs)


def test_chunking_does_not_change_attention_flops():
    # causal attention is triangular either way: sum over chunks == one pass
    cm = roofline()
    whole = cm.price(Composition((), (Chunk(8192),))).components["attention"].flops
    parts = sum(cm.price(Composition((), (Chunk(512, k * 512),))).components["attention"].flops
                for k in range(16))
    assert parts == pytest.approx(whole)


def test_chunks_reread_the_prefix_kv():
    m = DENSE_8B
    cm = roofline()
    first = cm.price(Composition((), (Chunk(512, 0),))).components["attention"].bytes
    later = cm.price(Composition((), (Chunk(512, 1024),))).components["attention"].bytes
    assert later - first == pytest.approx(1024 * m.kv_bytes_per_token)


def test_lm_head_only_for_emitting_rows():
    cm = roofline()
    middle = cm.price(Composition((), (Chunk(512, 0, last=False),)))
    last = cm.price(Composition((), (Chunk(512, 0, last=True),)))
    assert middle.components["lm_head"].flops == 0
    assert last.components["lm_head"].flops == pytest.approx(2 * 4096 * 128256)


def test_sliding_window_caps_attention():
    assert attended_pairs(0, 10, 4) == 1 + 2 + 3 + 4 * 7
    assert attended_pairs(100, 3, 4) == 12
    assert attended_pairs(2, 3, 4) == 3 + 4 + 4
    np.testing.assert_allclose(attended_pairs(np.array([0, 5]), 1, 4), [1, 4])
    mistral = roofline("mistral-7b")
    near = mistral.price(Composition((4000,))).components["attention"].flops
    far = mistral.price(Composition((40000,))).components["attention"].flops
    assert far == pytest.approx(near * 4096 / 4001)


def test_moe_reads_only_touched_experts():
    cm = roofline("mixtral-8x7b")
    assert cm.experts_touched(1) == pytest.approx(2)
    assert cm.experts_touched(4096) == pytest.approx(8)
    one = cm.price(Composition((100,))).components["linear"].bytes
    many = cm.price(Composition((100,) * 256)).components["linear"].bytes
    assert one < many


def test_bigger_iterations_never_cheaper():
    cm = roofline()
    times = [cm.price(Composition((2000,) * 32, (Chunk(n),))).time_s for n in (1, 64, 512, 4096)]
    assert times == sorted(times)


def test_bad_mode_and_overhead():
    with pytest.raises(InputError, match="mode"):
        CostModel(ILLUSTRATIVE, DENSE_8B, "fast")
    with pytest.raises(InputError, match="overhead"):
        CostModel(ILLUSTRATIVE, DENSE_8B, "roofline", overhead_s=-1)
