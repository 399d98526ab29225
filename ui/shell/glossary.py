"""Every term a learner meets, defined once. Pure Python (no Streamlit).

Pages write `first("ttft")` where they first use an acronym: "time to first token (TTFT)", the
acronym underlined, its definition on hover (the text then needs `unsafe_allow_html=True`), and
`term("ttft")` after that; `term("prefill")` marks a word the same way. `ACRONYMS` is what the
tests check every page against: each acronym spelled out where the page first uses it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from sim.serving.policies import POLICIES

CSS = ("<style>abbr[title], span.glossary-term { text-decoration: underline dotted; "
       "text-underline-offset: 0.2em; cursor: help; }</style>")


@dataclass(frozen=True)
class Term:
    id: str
    name: str          # as the text writes it: "TTFT", "prefill"
    definition: str    # one or two plain sentences
    long: str = ""     # an acronym's expansion, "" for a word


TERMS: dict[str, Term] = {t.id: t for t in (
    Term("prefill", "prefill",
         "Processing a request's whole prompt: every prompt token goes through the model (in one "
         "pass, or chunked, in a few), filling its KV cache; it ends with the first output token. "
         "Compute-bound when long: thousands of tokens share each weight read."),
    Term("stream", "stream",
         "A running request that emits tokens, one per iteration it is in: the reply a reader "
         "watches grow. Its decode is the work; the stream is the request."),
    Term("decode", "decode",
         "Generating the next output token of each stream: one token per stream per iteration. "
         "Memory-bound while the weights take longer to read than the arithmetic of one token "
         "per stream."),
    Term("iteration", "iteration",
         "One forward pass of the model over its batch, every request it holds. A request gets "
         "at most one new token from it, when the whole pass ends."),
    Term("budget", "token budget",
         "The most tokens one iteration may hold, stream tokens and prompt tokens together (vLLM's "
         "max_num_batched_tokens, SGLang's --chunked-prefill-size). Written B."),
    Term("chunk", "chunk",
         "The piece of a prompt one iteration carries. With budget B and D streams (one decode "
         "token each), the chunk is C = B − D tokens."),
    Term("stall", "freeze",
         "A gap between two tokens of a stream longer than 100 ms, counted whole: about the "
         "longest pause that still feels instantaneous (Nielsen, 1993), so a reader sees the "
         "stream stop. A stream is frozen while its current wait is over 100 ms."),
    Term("ttft", "TTFT", "From a request's arrival to its first output token: queue wait + prefill.",
         "time to first token"),
    Term("tbt", "TBT",
         "The gap between two successive tokens of one stream. vLLM's docs call it inter-token "
         "latency (ITL).", "time between tokens"),
    Term("itl", "ITL", "The gap between two successive tokens of one stream: the same as TBT.",
         "inter-token latency"),
    Term("tpot", "TPOT",
         "A request's mean gap between tokens: (last token − first token) / (tokens − 1).",
         "time per output token"),
    Term("kv", "KV",
         "The attention keys and values of every token a request holds (its KV cache), kept in GPU "
         "memory so each new token attends to them without recomputing them.", "key-value"),
    Term("slo", "SLO", "A latency target a server must meet, e.g. p99 TBT ≤ 100 ms.",
         "service-level objective"),
    Term("percentile", "p50 / p99",
         "Percentiles: p99 is the value 99% of the measurements are at or below, p50 the median. A "
         "freeze that hits each stream once can sit above the p99."),
    Term("roofline", "roofline",
         "What a GPU can do: FLOP/s = min(peak, bandwidth × intensity), where intensity = FLOPs / "
         "bytes moved. Below the ridge (peak / bandwidth) a pass is memory-bound, above it "
         "compute-bound."),
    Term("compute_bound", "compute-bound",
         "A pass whose time is set by its arithmetic, FLOPs / peak FLOP/s, because that takes "
         "longer than its memory reads: a long prompt."),
    Term("memory_bound", "memory-bound",
         "A pass whose time is set by the bytes it reads, bytes / bandwidth, because that takes "
         "longer than its arithmetic: a decode step, which reads every weight for one token per "
         "stream."),
    Term("flop", "FLOPs",
         "Multiplies and adds; a model does about 2 × parameters of them per token.",
         "floating-point operations"),
    Term("llm", "LLM", "A transformer model that writes text one token at a time.",
         "large language model"),
    Term("gemm", "GEMM", "A matrix product: the weight layers a transformer spends its time in.",
         "general matrix multiply"),
    Term("tp", "TP", "The model's weights split over several GPUs that run every iteration together.",
         "tensor parallelism"),
    Term("lm", "LM", "The LM head is the last layer: it turns a token's hidden state into scores "
                     "over the vocabulary.", "language-model"),
    Term("mlp", "MLP", "The feed-forward block of each transformer layer.", "multilayer perceptron"),
    Term("cdf", "CDF", "For each value x, the fraction of the measurements at or below x.",
         "cumulative distribution function"),
    Term("ccdf", "CCDF", "For each value x, the fraction of the measurements above x: 1 − CDF.",
         "complementary cumulative distribution function"),
    Term("bf16", "BF16", "A 16-bit (2-byte) number format most models are served in.", "bfloat16"),
    Term("qps", "QPS", "Requests arriving per second.", "queries per second"),
    # the Chunking is exact page's
    Term("attention_score", "attention score",
         "How much one token (the query) looks at another (the key): their vectors' dot product, "
         "scaled and turned into weights that sum to 1 over the keys at or before the query "
         "(causal attention)."),
    Term("logit", "logits",
         "The model's last output: one score per word of its vocabulary for the next token; the "
         "highest is the most likely."),
    Term("greedy", "greedy decoding",
         "Picking the highest logit as the next token every time, so the output follows from the "
         "numbers alone, with no random draw."),
    Term("float_precision", "float32 / float64",
         "Numbers stored in 32 or 64 bits. Each rounds a result to its nearest representable "
         "value: about 7 significant digits in float32 (machine epsilon 1.19e-7, the gap "
         "between 1 and the next number), about 16 in float64 (2.22e-16)."),
    Term("logit_margin", "logit margin",
         "The highest logit minus the second highest: how much the numbers would have to move "
         "for greedy decoding to pick another token. A margin smaller than the rounding "
         "differences is a near tie."),
    # the Disaggregation page's
    Term("disaggregation", "disaggregation",
         "Serving prompts and decodes on separate GPUs: a prefill pool computes each prompt and "
         "its first token, then the prompt's KV cache moves over a link to a decode pool, which "
         "emits the rest (DistServe, Splitwise, Mooncake). No prefill ever shares an iteration "
         "with a decode."),
    Term("prefill_pool", "prefill pool",
         "The GPUs of a disaggregated server that only prefill: each prompt goes to one of its "
         "instances in turn (round-robin)."),
    Term("decode_pool", "decode pool",
         "The GPUs of a disaggregated server that only decode: a prefilled request goes to the "
         "instance with the most free KV cache and waits there until its KV and a seat fit."),
    Term("kv_transfer", "KV transfer",
         "A prompt's KV cache sent from its prefill GPU to its decode GPU: prompt tokens × KV "
         "bytes per token, taking bytes / link bandwidth + the link's latency."),
    Term("colocated", "colocated",
         "Prompts and decodes on the same GPUs, sharing iterations (chunked prefill): here, the "
         "same GPUs as the disaggregated setup run as independent instances, requests "
         "round-robin."),
    Term("goodput", "goodput",
         "DistServe's measure: the highest request rate at which at least 90% of requests meet "
         "both their TTFT and their TPOT target; divided by the GPUs, per GPU."),
    Term("makespan", "makespan",
         "A run's length: from its first request's arrival to the end of its last iteration."),
    Term("p90", "p90",
         "The 90th percentile: the value 90% of the measurements are at or below (linear "
         "interpolation between the ranked values)."),
    # the Pipeline page's
    Term("pipeline_parallelism", "pipeline parallelism",
         "Splitting a model's layers, in order, over groups of GPUs (stages): each batch passes "
         "through the stages one after the other, so several batches can be in flight at once, "
         "one on each stage."),
    Term("stage", "stage",
         "One group of GPUs in a pipeline, holding a run of the model's layers and their share "
         "of the weights and of every token's KV cache; it hands its output (the activations) "
         "to the next stage over a link."),
    Term("micro_batch", "micro-batch",
         "One iteration's batch as it flows through a pipeline's stages; up to one per stage is "
         "in flight, each from its own scheduler (a virtual engine)."),
    Term("bubble", "bubble",
         "Time a pipeline stage stands idle while micro-batches are in the pipeline, waiting "
         "for the next one. Summed over stages: stages × working time − the stages' busy time; "
         "as a fraction, that over stages × working time."),
    Term("working_time", "working time",
         "The time at least one micro-batch is in a pipeline, from the first stage's start of "
         "one to the last stage's end of the last in flight: each stage could be busy all of "
         "it, so stages × working time less the stages' busy time is the bubble."),
    Term("virtual_engine", "virtual engine",
         "vLLM's and Sarathi-Serve's way to keep a pipeline full: one scheduler per micro-batch "
         "in flight, each with its own requests, which plans its next micro-batch once its last "
         "has left the last stage."),
    Term("dynamic_chunking", "dynamic chunking",
         "SGLang's chunk sizing for pipelines: it fits prefill time against length as "
         "a·l² + b·l + c and sizes each later chunk of a prompt so its time stays that of the "
         "first, so chunks shrink as the prompt's prefix grows."),
    Term("prefix_caching", "prefix caching",
         "Keeping the KV of a prompt's full blocks and reusing it for a later prompt that starts "
         "with the same tokens (a shared system prompt, a conversation's earlier turns): only the "
         "rest of the prompt is prefilled. In the lab, as in vLLM V1, a block is readable once the "
         "chunk that fills it has run, while its request still runs, and stays cached after it "
         "finishes. On by default in vLLM V1 and SGLang."),
    Term("cache_hit", "cache hit",
         "The prompt tokens a request finds cached: ⌊min(shared prefix, prompt − 1) / block⌋ × "
         "block. One prompt token is always computed, for its logits."),
    Term("kv_block", "block",
         "The unit KV memory is allocated and cached in: 16 tokens in vLLM and Sarathi-Serve, "
         "one token (a page) in SGLang. Only full blocks are cached."),
    Term("lru", "LRU eviction",
         "Least recently used first: when a block is needed and none is free, the cached blocks "
         "read longest ago (and nobody reads now) are dropped first."),
    Term("radix_cache", "radix cache",
         "SGLang's prefix cache: a radix tree of token sequences, matched token by token, its "
         "least recently used leaves evicted first."),
    # the engines, each as the lab models it: its release, and how it builds an iteration
    *(Term(p.name, f"{p.engine} {p.profile.release}",
           f"{p.intro}. As the lab models it ({p.profile.version}): {p.summary}.")
      for p in POLICIES.values()),
    # the words a lane's title puts after its engine
    Term("stall_free", "stall-free",
         f"Sarathi-Serve's batching: {POLICIES['sarathi'].summary}, so no stream waits for a "
         "prompt."),
    Term("prefill_first", "prefill-first", f"SGLang's default: {POLICIES['sglang'].summary}."),
    Term("own_budget", "own budget",
         "vLLM V0 never splits a prompt, so the sidebar's budget does not apply to it: its "
         "budget is max(max_model_len, 2,048) tokens, max_model_len being the longest request, "
         "prompt + output, so any prompt fits in one iteration (8,192 + 32 = 8,224 at the "
         "defaults)."),
)}

# The acronyms every page must spell out where it first uses them: {acronym: expansion}.
ACRONYMS = {t.name: t.long for t in TERMS.values() if t.long}


def _hover(text: str, t: Term) -> str:
    tag = "abbr" if t.long else 'span class="glossary-term"'
    return f'<{tag} title="{html.escape(t.definition)}">{html.escape(text)}</{tag.split()[0]}>'


def term(key: str, text: str | None = None) -> str:
    """The term as the text writes it (or `text`), its definition on hover."""
    t = TERMS[key]
    return _hover(t.name if text is None else text, t)


def first(key: str, hover: bool = True) -> str:
    """An acronym where the page first uses it: "time to first token (TTFT)", with the hover
    (`hover=False` where the text cannot hold HTML: alerts, labels)."""
    t = TERMS[key]
    return f"{t.long} ({term(key) if hover else t.name})"


def entries() -> list[str]:
    """The glossary as Markdown lines, in the order a learner meets the terms."""
    return [f"**{t.name}**" + (f" ({t.long})" if t.long else "") + f": {t.definition}"
            for t in TERMS.values()]
