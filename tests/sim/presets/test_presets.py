"""Every preset pinned against its source figure, and the known formula bugs of public tools."""

import math

import pytest

from sim.errors import InputError
from sim.presets.hardware import GPUS, custom_gpu, get_gpu
from sim.presets.models import MODELS, custom_model, get_model, model_from_hf_config

# (dense BF16 TFLOP/s, memory GB/s, memory GB) from docs/sources.md, "GPU datasheets and public GPU
# tables", and the GPU-to-GPU link in GB/s one way: half the datasheets' bidirectional NVLink /
# PCIe / Infinity Fabric figures
GPU_SOURCE = {
    "illustrative": (400, 3000, 80, 0), "a100-40gb": (312, 1555, 40, 300),
    "a100-80gb": (312, 2039, 80, 300), "h100-sxm": (989, 3350, 80, 450),
    "h200": (989, 4800, 141, 450), "l4": (121, 300, 24, 32), "l40s": (362, 864, 48, 32),
    "rtx-4090": (165, 1008, 24, 32), "mi300x": (1307, 5300, 192, 448),
    "b200": (2250, 7700, 180, 900),
    # NVIDIA A100 datasheet: the PCIe cards, paired by an NVLink Bridge ("600 GB/s")
    "a100-pcie-40gb": (312, 1555, 40, 300), "a100-pcie-80gb": (312, 1935, 80, 300),
}
# The total memory each device reports, MiB (nvidia-smi; rocminfo's KB / 1024 for the MI300X),
# as sim/presets/hardware.py REPORTED_MIB cites it; the textbook GPU is its datasheet's 80 GB
REPORTED_MIB = {
    "a100-40gb": 40960, "a100-80gb": 81920, "h100-sxm": 81559, "h200": 143771, "l4": 23034,
    "l40s": 46068, "rtx-4090": 24564, "mi300x": 196592, "b200": 183359,
    "a100-pcie-40gb": 40960, "a100-pcie-80gb": 81920,
}


@pytest.mark.parametrize("gpu_id", GPU_SOURCE)
def test_gpu_preset_matches_source(gpu_id):
    tflops, gbps, mem, link_gbps = GPU_SOURCE[gpu_id]
    gpu = get_gpu(gpu_id)
    assert gpu.peak_flops == tflops * 1e12
    assert gpu.bandwidth == gbps * 1e9
    assert gpu.datasheet_bytes == mem * 1e9
    assert gpu.memory_bytes == REPORTED_MIB.get(gpu_id, mem * 1e9 / 2**20) * 2**20
    assert gpu.interconnect_bandwidth == link_gbps * 1e9
    assert gpu.source and gpu.memory_source


def test_an_80_gb_h100_reports_79_6_gib_and_the_estimated_figures_say_so():
    assert get_gpu("h100-sxm").memory_bytes == 85_520_809_984
    assert get_gpu("h100-sxm").memory_bytes / 2**30 == pytest.approx(79.65, abs=0.005)
    estimated = {g.id for g in GPUS.values() if g.memory_source.startswith("estimated")}
    assert estimated == {"a100-pcie-40gb", "a100-pcie-80gb"}


def test_every_gpu_preset_is_pinned():
    assert set(GPUS) == set(GPU_SOURCE)


def test_dense_peaks_not_sparse():
    # The sparsity figures are 2x: H100 SXM 1,979 (sparse) must not be the preset; L4 242 neither.
    assert get_gpu("h100-sxm").peak_flops == 989e12
    assert get_gpu("l4").peak_flops == 121e12


def test_ridge_point_a100():
    # 312e12 / 2.039e12 = 153 FLOPs/byte (DistServe: "compute-bound when AI is over 156").
    assert get_gpu("a100-80gb").ridge_flops_per_byte == pytest.approx(153.0, abs=0.1)


# Total parameters in billions (attention q/k/v/o + MLP + untied embedding and LM head)
# as printed in the source, compared at the source's precision
PARAMS_B = {"llama-3.1-8b": "8.03", "llama-3.1-70b": "70.55", "mistral-7b": "7.24",
            "mistral-7b-instruct-v0.2": "7.24",
            "qwen2.5-7b": "7.62", "qwen2.5-72b": "72.70", "mixtral-8x7b": "46.70",
            "yi-34b": "34.39", "falcon-180b": "179.5", "llama-2-7b": "6.74",
            # the lab's count: OPT ties its LM head to the embedding, counted here apart
            "opt-13b": "13.10"}
KV_KIB = {"llama-3.1-8b": 128, "llama-3.1-70b": 320, "qwen2.5-7b": 56, "llama-2-7b": 512,
          "opt-13b": 800,   # 2 x 40 layers x 40 KV heads x 128 x 2 bytes: no GQA
          "dense-8b": 128}


@pytest.mark.parametrize("model_id", PARAMS_B)
def test_model_params_match_cross_check(model_id):
    printed = PARAMS_B[model_id]
    decimals = len(printed.split(".")[1])
    assert f"{get_model(model_id).params / 1e9:.{decimals}f}" == printed


@pytest.mark.parametrize("model_id", KV_KIB)
def test_kv_bytes_per_token(model_id):
    assert get_model(model_id).kv_bytes_per_token == KV_KIB[model_id] * 1024


def test_mistral_instruct_v0_2_has_full_attention():
    # Its config.json sets sliding_window to null; v0.1 attends to the last 4,096 tokens only.
    # Sarathi-Serve's capacity runs use v0.2, so a window there would shrink its attention cost.
    assert get_model("mistral-7b-instruct-v0.2").sliding_window == 0
    assert get_model("mistral-7b").sliding_window == 4096
    shapes = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab")
    assert all(getattr(get_model("mistral-7b-instruct-v0.2"), f) == getattr(get_model("mistral-7b"), f)
               for f in shapes)


def test_a100_pcie_is_the_sxm_chip_with_its_own_bandwidth():
    # Same GA100 peak; the 80 GB PCIe card's HBM2e runs at 1,935 GB/s, not the SXM's 2,039.
    assert get_gpu("a100-pcie-80gb").peak_flops == get_gpu("a100-80gb").peak_flops
    assert get_gpu("a100-pcie-80gb").bandwidth < get_gpu("a100-80gb").bandwidth
    assert get_gpu("a100-pcie-40gb").bandwidth == get_gpu("a100-40gb").bandwidth


def test_dense_8b_is_the_source_articles_model():
    m = get_model("dense-8b")
    assert m.params == 8e9
    assert m.weight_bytes == 16e9              # 16 GB in bf16
    assert m.flops_per_token == 16e9           # 16 GFLOP per token


def test_mixtral_active_params():
    m = get_model("mixtral-8x7b")
    assert m.active_params / 1e9 == pytest.approx(12.9, abs=0.05)
    assert m.flops_per_token == 2 * m.active_params


def test_every_model_preset_is_pinned():
    assert set(MODELS) == set(PARAMS_B) | {"dense-8b"}
    assert all(m.source for m in MODELS.values())


def test_gqa_kv_uses_kv_heads_not_attention_heads():
    # Bug in public tools: KV bytes from attention heads would give 4x (512 KiB) for Llama-3.1-8B.
    m = get_model("llama-3.1-8b")
    assert m.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2


def test_head_dim_from_config_not_hidden_over_heads():
    # Falcon-180B: hidden/heads = 14848/232 = 64 happens to match; Qwen2.5-7B: 3584/28 = 128 too.
    # A config whose head_dim differs from hidden/heads must keep its head_dim.
    cfg = {"num_hidden_layers": 2, "hidden_size": 2048, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 4096, "vocab_size": 1000}
    m = model_from_hf_config(cfg)
    assert m.head_dim == 128 and m.q_dim == 1024
    assert m.kv_bytes_per_token == 2 * 2 * 2 * 128 * 2


def test_hf_config_of_llama_3_1_8b_matches_preset():
    cfg = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 128256}
    m = model_from_hf_config(cfg)
    assert m.counted_params == get_model("llama-3.1-8b").counted_params
    assert m.kv_bytes_per_token == get_model("llama-3.1-8b").kv_bytes_per_token


def test_hf_config_of_mixtral():
    cfg = {"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2}
    assert model_from_hf_config(cfg).counted_params == get_model("mixtral-8x7b").counted_params


@pytest.mark.parametrize("cfg, word", [
    ({"hidden_size": 4096}, "lacks num_attention_heads"),
    ([1, 2], "JSON object"),
    ({"num_hidden_layers": 2, "hidden_size": 4, "num_attention_heads": 8, "vocab_size": 10},
     "head_dim must be a whole number"),
    ({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 3,
      "vocab_size": 10}, "multiple"),
    ({"num_hidden_layers": -1, "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10},
     "layers"),
])
def test_bad_hf_config_names_the_field(cfg, word):
    with pytest.raises(InputError, match=word):
        model_from_hf_config(cfg)


def test_custom_gpu_and_model_validate():
    assert custom_gpu(400, 3, 80).peak_flops == 400e12
    for bad in (0, -1, math.nan, "x"):
        with pytest.raises(InputError, match="peak TFLOP/s"):
            custom_gpu(bad, 3, 80)
    with pytest.raises(InputError, match="layers"):
        custom_model(layers=0, hidden=64, heads=8, kv_heads=8, intermediate=128, vocab=10)


def test_unknown_ids_list_the_choices():
    with pytest.raises(InputError, match="a100-80gb"):
        get_gpu("a100")
    with pytest.raises(InputError, match="llama-2-7b"):
        get_model("llama")
