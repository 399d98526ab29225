"""The links table and a KV transfer's price (sim/presets/links.py), checked by hand."""

import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.links import FREE_LINK, LINKS, exposed_seconds, get_link, gpu_link, price_transfer
from sim.presets.models import get_model


def test_an_8192_token_prompt_of_llama_3_1_8b_over_nvlink_4_by_hand():
    # KV per token: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
    assert cost.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131_072
    transfer = price_transfer(8192, cost.kv_bytes_per_token, get_link("nvlink4"))
    assert transfer.nbytes == 8192 * 131_072 == 1_073_741_824            # 1.07 GB
    # 1.07e9 B / 450e9 B/s = 2.386 ms, plus 3 us of latency
    assert transfer.seconds == pytest.approx(1_073_741_824 / 450e9 + 3e-6)
    assert transfer.seconds == pytest.approx(2.389e-3, abs=1e-6)
    assert transfer.exposed_s == transfer.seconds                       # sent after the prefill


def test_the_same_prompt_over_100_gbe_takes_36_times_longer():
    transfer = price_transfer(8192, 131_072, get_link("100gbe"))
    assert transfer.seconds == pytest.approx(1_073_741_824 / 12.5e9 + 10e-6)   # 85.9 ms
    assert transfer.seconds / price_transfer(8192, 131_072, get_link("nvlink4")).seconds \
        == pytest.approx(36, rel=0.01)


def test_a_layer_by_layer_send_hides_behind_the_prefill_but_for_its_last_layer():
    assert exposed_seconds(32e-3, 32, prefill_s=1.0) == pytest.approx(1e-3)   # the last layer
    assert exposed_seconds(32e-3, 32, prefill_s=10e-3) == pytest.approx(22e-3)
    hidden = price_transfer(8192, 131_072, get_link("100gbe"), layers=32, prefill_s=0.5,
                            layerwise=True)
    assert hidden.exposed_s == pytest.approx(hidden.seconds / 32)


def test_each_link_has_a_source_and_the_free_link_costs_nothing():
    assert all(link.source and link.bandwidth > 0 and link.latency_s > 0
               for link in LINKS.values())
    assert {"nvlink4", "pcie4", "100gbe", "ib-hdr", "ib-ndr"} <= set(LINKS)
    assert FREE_LINK.transfer_seconds(1e12) == 0.0
    assert get_link("ib-ndr").bandwidth == 50e9 and get_link("ib-hdr").bandwidth == 25e9


def test_a_gpu_preset_names_its_own_link_and_bad_names_are_refused():
    assert gpu_link(get_gpu("h100-sxm")).id == "nvlink4"
    assert gpu_link(get_gpu("a100-80gb")).id == "nvlink3"
    assert gpu_link(get_gpu("l4")).id == "pcie4"
    with pytest.raises(InputError, match="has no GPU-to-GPU link in its preset; name one with"):
        gpu_link(get_gpu("illustrative"))
    with pytest.raises(InputError, match=r"unknown link 'nvlink9'; choose one of nvlink3, "):
        get_link("nvlink9")
