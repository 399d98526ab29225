"""Model presets from each model's Hugging Face `config.json`, and the quantities derived from them.

Parameters are counted the way docs/sources.md ("Model configurations") cross-checks them:
attention q/k/v/o + MLP (+ MoE router) per layer, plus an untied embedding and LM head. Norm
weights are left out (under 0.01% of any preset). KV bytes per token use `head_dim` and the KV
heads, never hidden/heads: that is the most common bug in public KV calculators.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.errors import InputError, check_number


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer. Frozen, so it can key a cache."""

    id: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int             # per expert for MoE
    vocab: int
    source: str
    gated_mlp: bool = True        # SwiGLU (3 matrices) vs GELU (2 matrices)
    experts: int = 1
    experts_per_token: int = 1
    sliding_window: int = 0       # 0: attention sees the whole context
    nominal_params: float = 0.0   # a round figure that overrides the count (the source article's "8B")
    weight_bytes_per_param: float = 2.0   # bf16
    kv_bytes_per_element: float = 2.0     # bf16 KV cache
    # max_position_embeddings: the context an engine serves by default (SGLang sizes its default
    # running requests by it, sim/serving/engines.py)
    context_len: int = 131072

    # --- per-layer shapes -------------------------------------------------------------------
    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def attention_params_per_layer(self) -> int:
        """Q, K, V and O projections."""
        return self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden

    @property
    def expert_params(self) -> int:
        """One MLP (one expert for MoE)."""
        return (3 if self.gated_mlp else 2) * self.hidden * self.intermediate

    @property
    def router_params_per_layer(self) -> int:
        return self.hidden * self.experts if self.experts > 1 else 0

    @property
    def layer_params(self) -> int:
        return (self.attention_params_per_layer + self.experts * self.expert_params
                + self.router_params_per_layer)

    @property
    def active_layer_params(self) -> int:
        """Parameters one token multiplies through in one layer (top-k experts for MoE)."""
        return (self.attention_params_per_layer + self.experts_per_token * self.expert_params
                + self.router_params_per_layer)

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    # --- whole-model quantities ------------------------------------------------------------
    @property
    def counted_params(self) -> int:
        """Layers + embedding + LM head, from the shapes."""
        return self.layers * self.layer_params + 2 * self.embedding_params

    @property
    def params(self) -> float:
        """The parameter count the model is known by (nominal where the source article gives one)."""
        return self.nominal_params or float(self.counted_params)

    @property
    def active_params(self) -> float:
        """Parameters used per token: what FLOPs per token scale with."""
        if self.nominal_params:
            return self.nominal_params
        return float(self.layers * self.active_layer_params + 2 * self.embedding_params)

    @property
    def weight_bytes(self) -> float:
        return self.params * self.weight_bytes_per_param

    @property
    def flops_per_token(self) -> float:
        """2 FLOPs (multiply + add) per active parameter: the source article's 16 GFLOP/token for 8B."""
        return 2.0 * self.active_params

    @property
    def kv_bytes_per_token(self) -> float:
        """2 (K and V) x layers x KV heads x head_dim x bytes per element."""
        return 2.0 * self.layers * self.kv_dim * self.kv_bytes_per_element


MAX_PARAMS = 1e15   # the largest model the lab prices (the worked example's params ceiling too)

LLAMA3_8B_LAYOUT = dict(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128,
                        intermediate=14336, vocab=128256)

MODELS: dict[str, Model] = {m.id: m for m in (
    Model("dense-8b", "8B model (textbook example)", **LLAMA3_8B_LAYOUT, nominal_params=8e9,
          context_len=8192, source="the source articles' worked example: 8e9 parameters of 2 bytes (16 GB), "
                 "16 GFLOP per token; KV and layer layout of Llama-3-8B"),
    Model("llama-3.1-8b", "Llama-3.1-8B", **LLAMA3_8B_LAYOUT,
          source="meta-llama/Llama-3.1-8B config.json"),
    Model("llama-3.1-70b", "Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256,
          source="meta-llama/Llama-3.1-70B config.json"),
    Model("mistral-7b", "Mistral-7B v0.1", 32, 4096, 32, 8, 128, 14336, 32000, sliding_window=4096,
          context_len=32768, source="mistralai/Mistral-7B-v0.1 config.json (sliding_window 4096)"),
    Model("mistral-7b-instruct-v0.2", "Mistral-7B-Instruct-v0.2", 32, 4096, 32, 8, 128, 14336,
          32000, context_len=32768, source="mistralai/Mistral-7B-Instruct-v0.2 config.json at revision 41b61a33a248 "
                        "(sliding_window null: full attention, unlike v0.1)"),
    Model("qwen2.5-7b", "Qwen2.5-7B", 28, 3584, 28, 4, 128, 18944, 152064,
          source="Qwen/Qwen2.5-7B config.json"),
    Model("qwen2.5-72b", "Qwen2.5-72B", 80, 8192, 64, 8, 128, 29568, 152064,
          source="Qwen/Qwen2.5-72B config.json"),
    Model("mixtral-8x7b", "Mixtral-8x7B", 32, 4096, 32, 8, 128, 14336, 32000, experts=8,
          experts_per_token=2, context_len=32768, source="mistralai/Mixtral-8x7B-v0.1 config.json (8 experts, top-2)"),
    Model("yi-34b", "Yi-34B", 60, 7168, 56, 8, 128, 20480, 64000, context_len=4096,
          source="01-ai/Yi-34B config.json"),
    Model("falcon-180b", "Falcon-180B", 80, 14848, 232, 8, 64, 59392, 65024, gated_mlp=False,
          context_len=2048, source="tiiuae/falcon-180B config.json (parallel attention, GELU MLP)"),
    Model("llama-2-7b", "Llama-2-7B", 32, 4096, 32, 32, 128, 11008, 32000, context_len=4096,
          source="meta-llama/Llama-2-7b-hf config.json (no GQA)"),
    # DistServe's model (OPT-13B on A100-80GB, its opening example and Table 1)
    Model("opt-13b", "OPT-13B", 40, 5120, 40, 40, 128, 20480, 50272, gated_mlp=False, context_len=2048,
          source="facebook/opt-13b config.json (ReLU MLP of 2 matrices; its LM head shares the "
                 "embedding's weights, which the lab counts apart: 13.10B where the checkpoint "
                 "holds 12.85B)"),
)}


def get_model(model_id: str) -> Model:
    try:
        return MODELS[model_id]
    except KeyError:
        raise InputError(f"unknown model {model_id!r}; choose one of {', '.join(MODELS)}") from None


def custom_model(*, layers, hidden, heads, kv_heads, head_dim=0, intermediate, vocab,
                 gated_mlp=True, experts=1, experts_per_token=1, sliding_window=0,
                 context_len=131072, name="Custom model") -> Model:
    """A model from plain fields; head_dim defaults to hidden/heads only when not given."""
    def whole(label, value, high=1e7):
        return check_number(label, value, high=high, integer=True)
    heads_n = whole("heads", heads, 4096)
    kv = whole("KV heads", kv_heads, 4096)
    if heads_n % kv:
        raise InputError(f"heads ({heads_n}) must be a multiple of KV heads ({kv})")
    hidden_n = whole("hidden", hidden)
    experts_n = whole("experts", experts, 1024)
    top_k = whole("experts per token", experts_per_token, 1024)
    if top_k > experts_n:
        raise InputError(f"experts per token ({top_k}) must be <= experts ({experts_n})")
    model = Model("custom", name, whole("layers", layers, 1000), hidden_n, heads_n, kv,
                  whole("head_dim", head_dim if head_dim else hidden_n / heads_n),
                  whole("intermediate", intermediate), whole("vocab", vocab),
                  source="user-supplied fields", gated_mlp=bool(gated_mlp), experts=experts_n,
                  experts_per_token=top_k,
                  context_len=whole("context length", context_len, 1e9),
                  sliding_window=int(check_number("sliding window", sliding_window or 0,
                                                  low=0, low_inclusive=True, integer=True)))
    if model.counted_params > MAX_PARAMS:
        raise InputError(_too_many_params(model))
    return model


def _too_many_params(m: Model) -> str:
    """Which fields make a model's parameter count too large: the largest of its three terms."""
    mlp = 3 if m.gated_mlp else 2
    terms = [
        (m.layers * m.experts * m.expert_params,
         f"the MLP: layers {m.layers:,} × experts {m.experts:,} × {mlp} × hidden {m.hidden:,} × "
         f"intermediate {m.intermediate:,}", "layers, hidden, intermediate or experts"),
        (m.layers * m.attention_params_per_layer,
         f"attention: layers {m.layers:,} × hidden {m.hidden:,} × (2 × heads {m.heads:,} + 2 × "
         f"KV heads {m.kv_heads:,}) × head_dim {m.head_dim:,}", "layers, hidden, heads or head_dim"),
        (2 * m.embedding_params, f"the embedding and LM head: 2 × vocab {m.vocab:,} × hidden "
         f"{m.hidden:,}", "vocab or hidden"),
    ]
    value, where, fields = max(terms)
    return (f"these fields give {m.counted_params:.3g} parameters, over the {MAX_PARAMS:g} this lab "
            f"prices; {value:.3g} of them come from {where}: lower {fields}")


def model_from_hf_config(config: dict, name: str = "From config.json") -> Model:
    """A model from a Hugging Face `config.json` dict (Llama, Mistral, Qwen2, Mixtral, Falcon)."""
    if not isinstance(config, dict):
        raise InputError(f"config.json must be a JSON object, got {type(config).__name__}")
    def field(*keys, default=None):
        for key in keys:
            if config.get(key) is not None:
                return config[key]
        if default is None:
            raise InputError(f"config.json lacks {' / '.join(keys)}")
        return default
    heads = field("num_attention_heads", "n_head")
    hidden = check_number("hidden_size", field("hidden_size", "n_embd"), high=1e7, integer=True)
    falcon = "falcon" in str(config.get("model_type", "")).lower()
    return custom_model(
        layers=field("num_hidden_layers", "n_layer"), hidden=hidden, heads=heads,
        kv_heads=field("num_key_value_heads", "num_kv_heads", "n_head_kv", default=heads),
        head_dim=field("head_dim", default=0),
        intermediate=field("intermediate_size", "ffn_hidden_size", default=4 * hidden),
        vocab=field("vocab_size"), gated_mlp=not falcon,
        experts=field("num_local_experts", "num_experts", default=1),
        experts_per_token=field("num_experts_per_tok", default=1),
        sliding_window=config.get("sliding_window") or 0,
        context_len=field("max_position_embeddings", default=131072), name=name)
