"""The scenario's knobs, declared once: each one's name, unit, default, range, help, and the
policies and workloads it applies to. The app's controls (ui/shell/controls.py) and the command line's
flags (cli/common.py) are both made from this table, so a knob's range, default and words cannot
drift apart between them.

The table's own default and range are the engine's (the command line takes them as they are).
Where the app differs on purpose it says so in `app`, with the reason: it opens on the worked
example (the `simple` cost mode, ShareGPT lengths), and its smaller maxima keep a page quick and
keep the meaning of links already shared (a link's value above a control's maximum is corrected
to that maximum, so raising it would change what an old link shows). `PolicySpec`
(sim/serving/policies.py) stays the one declaration of what a policy does; a knob only says which
policies read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from sim.ceilings import MAX_REQUESTS, MAX_STREAMS, MAX_TOKENS
from sim.cost.iteration import MODE_NAMES, MODES
from sim.presets.hardware import GPUS
from sim.presets.links import FREE_LINK, LINKS
from sim.presets.models import MODELS
from sim.serving.chunking import CHUNKINGS
from sim.serving.disaggregated import MAX_GPUS
from sim.serving.length_traces import SHAREGPT_TRACE_ROWS
from sim.serving.pipeline import MAX_STAGES
from sim.serving.policies import CHUNKED, ORDERS, POLICIES, SWITCHES, Limits
from sim.serving.workloads import (
    LENGTH_NAMES,
    LENGTHS,
    MIX_SPEC_WORDS,
    MIXES,
    SHAREGPT_MAX_OUTPUT,
    SHAREGPT_MAX_TOTAL,
    SHAREGPT_OUTPUT,
    SHAREGPT_PROMPT,
    TEXTBOOK,
)
from sim.studies import exactness

TEXTBOOK_SCENARIOS = ("textbook", "burst")   # the worked example's streams, with one prompt or a burst
POISSON = ("poisson",)
MIN_QPS = 1e-3
# The app's own ceilings (see each knob's `app.why`).
APP_MAX_BUDGET = 1_000_000
APP_MAX_REQUESTS = 1_000   # a page runs its workload once per policy, budget or rate


@dataclass(frozen=True)
class Surface:
    """Where one surface (the app) differs from the knob's own default or range, and why. A field
    left None is the knob's own."""
    why: str
    default: object = None
    low: float | None = None
    high: float | None = None


class Span(NamedTuple):
    default: object
    low: float
    high: float


@dataclass(frozen=True, kw_only=True)
class Knob:
    """One scenario knob. `name` is the run's own word for it (the flag `--max-seqs` is
    `max_seqs`, a `Limits` field keeps its name); `key` is its short name in the app's links
    (None: the app sets it from other controls instead of showing it)."""
    name: str
    unit: str
    default: object
    what: str                           # the flag's one line in `--help`
    low: float = 1
    high: float = MAX_TOKENS
    whole: bool = True
    choices: tuple[str, ...] = ()       # a knob with choices takes one of them
    shown_default: str | None = None    # the default in words, where it is "none" with a meaning
    key: str | None = None
    # earlier names still accepted, so commands and shared links that use them keep working
    old_flags: tuple[str, ...] = ()
    old_keys: tuple[str, ...] = ()
    label: str = ""                     # the app's label, its unit included
    step: float = 1
    help: str = ""                      # the app's tooltip: what it is and where it comes from
    policies: tuple[str, ...] = tuple(POLICIES)   # the policies that read it
    scenarios: tuple[str, ...] = ()     # the workloads it shapes; () every one
    app: Surface | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def kind(self) -> str:
        """"switch" (on or off, off by default), "choice", "int" or "float"."""
        if isinstance(self.default, bool):
            return "switch"
        return "choice" if self.choices else ("int" if self.whole else "float")

    def on_app(self) -> Span:
        """Its default and range in the app: the knob's own unless `app` says otherwise."""
        app = self.app or Surface("")
        return Span(self.default if app.default is None else app.default,
                    self.low if app.low is None else app.low,
                    self.high if app.high is None else app.high)

    def applies_to(self, policy: str) -> bool:
        return policy in self.policies


KEEP_LINKS = ("the app's range since links were first shared: a larger value in a link is "
              "corrected to this maximum, and keeps meaning what it showed")
PAGE_QUICK = "keeps every page's runs within its quick tier"

KNOBS: dict[str, Knob] = {k.name: k for k in (
    # --- hardware ---
    Knob(name="gpu", unit="", default="illustrative", what="the GPU (dense peaks, no sparsity)",
         choices=tuple(GPUS), key="gpu", label="GPU",
         help="Dense BF16 tensor-core peaks, no sparsity (sparse figures are 2x)."),
    Knob(name="model", unit="", default="dense-8b", what="the model", choices=tuple(MODELS),
         key="model", label="Model"),
    Knob(name="mode", unit="", default="roofline", choices=MODES,
         what="cost mode (simple: the worked example's arithmetic; roofline: attention, KV and "
              "activations too; calibrated: fitted to measured kernels)",
         key="mode", label="Cost mode",
         help=f"{MODE_NAMES['simple']} (`simple`): the source article's arithmetic (FLOPs = 2 x "
              "params x tokens; bytes = weights), so the defaults reproduce its worked example. "
              f"{MODE_NAMES['roofline']} (`roofline`): adds attention FLOPs, KV and activation "
              f"bytes and the LM head. {MODE_NAMES['calibrated']} (`calibrated`): the roofline's "
              "work at what real kernels achieve (fitted on measured A100 GEMMs; `python -m sim "
              "validate`).",
         app=Surface("the app opens on the worked example, whose numbers the simple arithmetic "
                     "reproduces", default="simple")),
    Knob(name="tp", unit="GPUs", default=1, high=64, key="tp", label="Tensor-parallel GPUs (tp)",
         what="tensor-parallel degree: GPUs the model is sharded over",
         help="The model sharded over this many GPUs: each holds 1/tp of the weights, FLOPs and "
              "KV heads (and 1/tp of the KV cache), and every layer adds two all-reduces over "
              "the GPU-to-GPU link. It must divide the model's attention heads."),
    # --- the policy's budget and limits (the limits are `Limits` fields, named alike) ---
    Knob(name="budget", unit="tokens", default=TEXTBOOK.budget, key="budget",
         label="Token budget per iteration", step=64,
         what="token budget per iteration, decodes included (max_num_batched_tokens; Orca has "
              "none)",
         help="vLLM `max_num_batched_tokens`, SGLang `--chunked-prefill-size`: tokens one "
              "forward pass may hold. Chunk = budget - decodes.",
         policies=tuple(n for n, p in POLICIES.items() if p.token_budget),
         app=Surface(KEEP_LINKS, high=APP_MAX_BUDGET)),
    Knob(name="max_seqs", unit="requests", default=None, high=MAX_REQUESTS,
         shown_default="the engine's own for the GPU and model (vLLM V1: 1,024, 256 on A100s "
                       "and smaller; SGLang max(min(KV tokens / context length × 512, 4,096), "
                       "2,048), at most half its KV tokens; Sarathi-Serve and vLLM V0 128; Orca "
                       "16, 8 for 70B and larger), at least the streams running at the start + 1",
         what="most requests running at once (max_num_seqs, max_running_requests)"),
    Knob(name="max_concurrent_prefills", unit="requests", default=None, high=MAX_REQUESTS,
         shown_default="no cap",
         what="chunked policies: most requests mid-prefill at once, so a prompt arriving behind "
              "that many waits for one to finish (a what-if, not a shipped rule of the releases "
              "profiled here: vLLM V0's max_num_partial_prefills came after the release pinned "
              "here, in vLLM PR 10235; PR 41399 proposes it for vLLM V1)",
         key="prefills", old_flags=("--max-partial-prefills",), old_keys=("partials",),
         label="Max concurrent prefills (0: no cap)",
         help="Chunked policies: most requests part-way through their prefill at once, a "
              "what-if of the lab's, not a shipped rule of the releases profiled here (vLLM V0's "
              "max_num_partial_prefills came after the release pinned here, in vLLM "
              "PR 10235; PR 41399 proposes it for vLLM V1, whose 0.33 has none; SGLang chunks one "
              "request at a time). 0 leaves it uncapped.",
         policies=CHUNKED,
         app=Surface("a number box cannot be empty, so 0 stands for no cap; " + KEEP_LINKS,
                     default=0, low=0, high=1024)),
    Knob(name="long_prefill_token_threshold", unit="tokens", default=0, low=0,
         shown_default="0: no cap, vLLM's own",
         what="vllm-v1: the most prompt tokens one request computes in an iteration while any "
              "other request runs or waits, leaving the rest of the budget to the others "
              "(vLLM's --long-prefill-token-threshold)",
         key="threshold", label="Long-prefill threshold (tokens, 0: no cap)", step=64,
         help="vLLM V1's `--long-prefill-token-threshold` (default 0: no cap): no request "
              "computes more prompt tokens than this in an iteration unless it is the only "
              "request running or waiting, so a long prompt leaves the rest of the budget to the "
              "requests beside it.",
         policies=("vllm-v1",),
         app=Surface("the page that draws it compares vLLM's default (0: no cap) with this "
                     "value, so it opens on a cap; " + KEEP_LINKS, default=256,
                     high=APP_MAX_BUDGET)),
    Knob(name="mixed_chunk", unit="", default=False,
         what="sglang: run the decodes in the prefill batch, its chunk the budget less the running "
              "decodes, instead of making them wait (SGLang's --enable-mixed-chunk; default off)",
         # no link key: the Long and short page sets it from its comparison (off, then on)
         policies=("sglang",)),
    Knob(name="disable_ignore_eos", unit="", default=False,
         what="sglang: requests may stop at EOS, as chat traffic does, so the running requests "
              "keep KV for new_token_ratio of their tokens to come (0.7 falling to 0.098); off "
              "(default), every request ignores EOS as SGLang's own benchmark sends them "
              "(its --disable-ignore-eos off) and keeps KV for all of them",
         key="eos", label="SGLang: stop at EOS",
         help="SGLang's benchmark sends every request with `ignore_eos` (unless "
              "`--disable-ignore-eos`), and a running request that ignores EOS keeps KV for "
              "all its tokens to come (ratio 1.0, `schedule_policy.py:787` at v0.5.23). On: the "
              "chat case, where it keeps new_token_ratio of them (0.7, falling a decode step at "
              "a time to 0.098).",
         policies=("sglang",)),
    Knob(name="max_long_partial_prefills", unit="requests", default=None, high=MAX_REQUESTS,
         shown_default="no cap",
         what="vllm-v1 beside a long prefill token threshold: most requests with more prompt "
              "tokens left than the threshold part way through their prefill at once; a long "
              "prompt past it waits and a shorter one behind it goes first (a what-if: vLLM V0's "
              "max_long_partial_prefills, default 1, came after the release pinned here, in vLLM "
              "PR 10235; PRs 41399 and 49075 propose it for vLLM V1)",
         help="A what-if of the lab's: vLLM V0's `max_long_partial_prefills` (PR 10235, default "
              "1), proposed for vLLM V1 by PRs 41399 and 49075. At most this many prompts longer "
              "than the long-prefill threshold are part-way through their prefill at once; a "
              "waiting long prompt past it keeps its place while shorter ones behind it are "
              "admitted.",
         policies=("vllm-v1",)),
    Knob(name="cap_lone_prefill", unit="", default=False,
         what="vllm-v1 beside a long prefill token threshold: cap a request's prompt tokens per "
              "iteration even when it is the only request running or waiting, as vLLM V1 did at "
              "v0.19.0, the release PR 41399 measured (vllm/v1/core/sched/scheduler.py:409-410, "
              "666-668 there); the release pinned here exempts a lone request",
         help="A what-if of the lab's, vLLM V1's rule at v0.19.0: the long-prefill threshold "
              "caps a request even when nothing else runs or waits, so a lone long prompt takes "
              "threshold-sized chunks. The release profiled here (0.33.0) lets a lone request "
              "take the whole budget.",
         policies=("vllm-v1",)),
    Knob(name="chunking", unit="", default="fixed", choices=CHUNKINGS, key="chunking",
         label="Chunk sizing",
         what="chunked policies: how a request's chunks are sized; fixed: what the budget leaves "
              "(every engine's rule); dynamic: SGLang's dynamic chunking, each later chunk of a "
              "prompt sized so its time stays level as the prefix grows (a quadratic fit of "
              "prefill time against length, smoothed, at least a quarter of the budget): SGLang's "
              "own rule for sglang at --pp above 1 (--enable-dynamic-chunking), a what-if for the "
              "other policies and at --pp 1",
         help="Fixed: a prompt's chunk is what the token budget leaves. Dynamic: SGLang's "
              "dynamic chunking, which fits f(l) = a·l² + b·l + c to its prefill time and sizes "
              "each later chunk so f(prefix + chunk) − f(prefix) stays f(budget) − f(0), smoothed "
              "towards the budget and at least a quarter of it. SGLang 0.5.23 uses it only with "
              "pipeline stages (pp > 1); elsewhere it is a what-if.",
         policies=CHUNKED),
    Knob(name="prefix_caching", unit="", default=None, choices=SWITCHES,
         shown_default="the engine's own: on for vllm-v1 and sglang, off for vllm-v0 and sarathi",
         label="Prefix caching",
         what="keep full KV blocks (readable once full, while their request runs, and after it) "
              "and reuse them for a prompt that starts with the same tokens, so only the "
              "uncached rest is prefilled and chunked (a hit at most prompt - 1 tokens, in whole "
              "blocks; least recently used evicted first); "
              "on as vLLM V1 (enable_prefix_caching) and SGLang (its radix cache) ship, off as "
              "vLLM V0 0.4.0 and the Sarathi-Serve artifact do",
         help="Full KV blocks are cached once the chunk that fills them has run, while their "
              "request still runs, and stay cached after it; a prompt that begins with the "
              "same tokens reads them instead of computing them: only the rest is prefilled. "
              "A hit is at most prompt − 1 tokens (one is always computed, for its logits), in "
              "whole blocks (16 tokens; SGLang 1); cached blocks nobody reads are free memory, "
              "evicted least recently used first. On by default in vLLM V1 and SGLang, off in "
              "vLLM V0 0.4.0 and the Sarathi-Serve artifact.",
         policies=tuple(n for n in POLICIES if not POLICIES[n].profile.kv_floor)),
    Knob(name="order", unit="", default="fcfs", choices=ORDERS, key="order",
         label="Waiting order",
         what="the waiting queue's order: fcfs, first come first served (every engine's "
              "default), or lpm, SGLang's longest prefix match first (--schedule-policy lpm: the "
              "request with the most tokens cached goes first, FCFS when more than 128 wait); a "
              "what-if for the other policies",
         help="FCFS: the waiting requests in their arrival order. LPM: SGLang's longest prefix "
              "match first, the request with the most cached tokens admitted first (a queue of "
              "more than 128 stays FCFS); it saves prefill where prompts share, and makes "
              "requests whose prompts share nothing wait.",
         policies=tuple(n for n in POLICIES if not POLICIES[n].profile.kv_floor)),
    # --- the worked example's streams, and a burst ---
    Knob(name="decodes", unit="requests", default=TEXTBOOK.decodes, low=0, high=MAX_STREAMS,
         key="decodes", label="Running streams", step=8, what="textbook, burst: requests already streaming",
         help="Requests already streaming when the prompt arrives; each emits one token per "
              "iteration it is in.",
         scenarios=TEXTBOOK_SCENARIOS, app=Surface(PAGE_QUICK + "; " + KEEP_LINKS, high=4096)),
    Knob(name="context", unit="tokens", default=TEXTBOOK.context, key="context",
         label="Streams' context (tokens)", step=500,
         what="textbook, burst: each streaming request's cached context",
         help="Tokens already in each stream's KV cache.",
         scenarios=TEXTBOOK_SCENARIOS, app=Surface(KEEP_LINKS, high=1_000_000)),
    Knob(name="prompt", unit="tokens", default=TEXTBOOK.prompt, key="prompt",
         label="New prompt (tokens)", step=512, what="textbook, burst: each new prompt's length",
         help="Tokens in the prompt that arrives while the streams run.",
         scenarios=TEXTBOOK_SCENARIOS, app=Surface(KEEP_LINKS, high=2_000_000)),
    Knob(name="decode_output", unit="tokens", default=TEXTBOOK.decode_output,
         what="textbook, burst: tokens each streaming request still emits", scenarios=TEXTBOOK_SCENARIOS),
    Knob(name="prompt_output", unit="tokens", default=TEXTBOOK.prompt_output,
         what="textbook, burst: tokens each new request emits", scenarios=TEXTBOOK_SCENARIOS),
    Knob(name="burst", unit="prompts", default=TEXTBOOK.burst, high=MAX_STREAMS, key="burst",
         label="Prompts in the burst", what="burst: prompts arriving together",
         help="The source article's burst: ten 8,192-token prompts arriving together.",
         scenarios=("burst",), app=Surface(PAGE_QUICK + "; " + KEEP_LINKS, high=1000)),
    # --- Poisson arrivals ---
    Knob(name="requests", unit="requests", default=None, high=MAX_REQUESTS,
         shown_default="none: the textbook scenario", what="poisson: how many requests",
         key="requests", label="Requests", step=50, scenarios=POISSON,
         app=Surface(PAGE_QUICK + " (a page runs its workload once per policy, budget or rate)",
                     default=200, high=APP_MAX_REQUESTS)),
    Knob(name="qps", unit="requests/s", default=None, low=MIN_QPS, high=1e6, whole=False,
         shown_default="none",
         what="poisson: arrival rate; at least --requests / 1e7 s (arrival times beyond 116 "
              "days lose precision)",
         key="qps", label="Arrival rate (requests/s)", step=0.5,
         help="Poisson arrivals: the gaps between requests are exponential with mean 1 / rate.",
         scenarios=POISSON,
         app=Surface("a page needs a rate to draw at once; " + KEEP_LINKS, default=4.0,
                     low=0.01, high=1000)),
    Knob(name="prompt_tokens", unit="tokens", default=1024,
         what="poisson, --lengths fixed: each prompt's length; uniform: the longest",
         key="plen", label="Prompt tokens", step=256,
         help=f"{LENGTH_NAMES['fixed']}: every prompt; {LENGTH_NAMES['uniform']}: the longest. "
              "Not used by the ShareGPT lengths.",
         scenarios=POISSON, app=Surface(PAGE_QUICK + "; " + KEEP_LINKS, high=131_072)),
    Knob(name="output_tokens", unit="tokens", default=128,
         what="poisson, --lengths fixed: each request's output; uniform: the longest",
         key="olen", label="Output tokens", step=32,
         help=f"{LENGTH_NAMES['fixed']}: every output; {LENGTH_NAMES['uniform']}: the longest. "
              "Not used by the ShareGPT lengths.",
         scenarios=POISSON, app=Surface(PAGE_QUICK + "; " + KEEP_LINKS, high=32_768)),
    Knob(name="lengths", unit="", default="fixed", choices=LENGTHS,
         what="poisson: request lengths (fixed, uniform from 1, ShareGPT-like lognormals "
              f"with median prompt {SHAREGPT_PROMPT[0]:,} and output {SHAREGPT_OUTPUT[0]:,} "
              "tokens, or the ShareGPT trace itself: consecutive requests from a row the random seed "
              "picks)",
         key="lengths", label="Lengths",
         help=f"{LENGTH_NAMES['sharegpt']} (`sharegpt`): lognormals fitted to the medians and "
              "P90s of the ShareGPT trace Sarathi-Serve replays (prompt "
              f"{SHAREGPT_PROMPT[0]:,} / {SHAREGPT_PROMPT[1]:,}, "
              f"output {SHAREGPT_OUTPUT[0]:,} / {SHAREGPT_OUTPUT[1]:,} tokens), a request "
              f"drawn again when it falls outside the trace's limits (output <= "
              f"{SHAREGPT_MAX_OUTPUT:,}, prompt + output <= {SHAREGPT_MAX_TOTAL:,}). "
              f"{LENGTH_NAMES['sharegpt-trace']} (`sharegpt-trace`): that trace's own "
              f"{SHAREGPT_TRACE_ROWS:,} requests, taken in order from a row the random seed picks "
              "(a conversation's turns stay together). "
              f"{LENGTH_NAMES['fixed']} (`fixed`): every request the same. "
              f"{LENGTH_NAMES['uniform']} (`uniform`): whole numbers from 1 to the lengths below.",
         scenarios=POISSON,
         app=Surface("the app shows realistic traffic first, as Sarathi-Serve measured it",
                     default="sharegpt")),
    Knob(name="prefix_tokens", unit="tokens", default=0, low=0,
         key="prefix", label="Shared prefix (tokens)", step=256,
         what="poisson: a system prompt of this many tokens before the prompts of a share "
              "--prefix-share of the requests (0: none); not with --lengths sharegpt-trace, "
              "whose turns share their conversation's start",
         help="A system prompt of this many tokens put before each drawn prompt of a share of "
              "the requests, the same tokens for all of them: prefix caching computes it once.",
         scenarios=POISSON,
         app=Surface("the Prefix caching page opens on a system prompt worth caching",
                     default=2048, high=131_072)),
    Knob(name="prefix_share", unit="share", default=1.0, low=0, high=1, whole=False,
         key="pshare", label="Share with the prefix", step=0.1,
         what="poisson: the share of requests (0 to 1) whose prompts begin with the shared "
              "prefix, each drawn with that chance",
         help="Each request has the shared prefix with this chance; the others' prompts share "
              "nothing.",
         scenarios=POISSON),
    Knob(name="mix", unit="", default=None, choices=tuple(MIXES),
         shown_default="none: one class, lengths from --lengths",
         what="poisson: mixed traffic in place of --lengths, request classes each with its share "
              f"and its prompt and output lengths: {MIX_SPEC_WORDS}. The presets: "
              + " ".join(f"{name}: {mix.words()}." for name, mix in MIXES.items()),
         key="mix", label="Traffic mix",
         help="Request classes served together, each with its share of the Poisson arrivals "
              "(or one request at a set time) and its own prompt and output lengths. "
              + " ".join(f"{name}: {mix.words()}." for name, mix in MIXES.items()),
         scenarios=POISSON,
         app=Surface("the page that draws it is about mixed traffic: it opens on the first preset",
                     default=next(iter(MIXES)))),
    Knob(name="seed", unit="", default=0, low=0, high=2**32 - 1,
         what="poisson: random seed of arrivals and lengths", key="seed", label="Random seed",
         help="The same random seed draws the same requests.", scenarios=POISSON,
         app=Surface(KEEP_LINKS, high=2**31 - 1)),
)}

# The exactness study's knobs (sim/studies/exactness.py): the flags of `python -m sim exactness`
# and the Chunking is exact page's controls. A table of their own: they shape the tiny decoder,
# not a serving scenario, and the page's keys are its own so a scenario's prompt keeps its value.
EXACTNESS_KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob(name="prompt", unit="tokens", default=exactness.DEFAULT_PROMPT, high=exactness.MAX_PROMPT,
         what="the tiny decoder's prompt length", key="exprompt", label="Prompt (tokens)",
         step=64, help="Tokens of the random prompt the tiny decoder reads, in one pass and in "
                       "chunks. The longest, 4,096, takes about a second."),
    Knob(name="chunk", unit="tokens", default=exactness.DEFAULT_CHUNK, high=exactness.MAX_PROMPT,
         what="tokens per chunk of the chunked prefill (as long as the prompt or longer: one "
              "chunk, the one pass itself)",
         key="exchunk", label="Chunk (tokens)", step=16,
         help="Tokens per chunk; the last chunk takes what is left. A chunk as long as the "
              "prompt is the one pass itself."),
    Knob(name="seed", unit="", default=0, low=0, high=exactness.MAX_SEED,
         what="random seed of the decoder's weights and the prompt's tokens", key="exseed",
         label="Random seed", help="The same random seed draws the same weights and prompt."),
    Knob(name="search_s", unit="s", default=exactness.DEFAULT_SEARCH_S, low=0,
         high=exactness.MAX_SEARCH_S, whole=False,
         what="seconds for the near-tie search over the seeds after --seed (0: no search); no "
              "try starts that could pass it"),
)}

# Disaggregated serving's knobs (sim/serving/disaggregated.py `Disaggregation`): prefill on some
# GPUs, decode on others, the KV cache handed over a link. `simulate --disaggregate X:Y` sets the
# two pools' GPUs at once; the rest are flags of their own. A table of their own: they shape
# where a run is served, not its workload or its policy.
DISAGGREGATION_KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob(name="prefill_gpus", unit="GPUs", default=1, high=MAX_GPUS, key="prefillgpu",
         what="GPUs that only prefill (in instances of --prefill-tp)", label="Prefill GPUs",
         help="GPUs that run prompts only: each prompt's prefill and first token, then its KV "
              "cache goes to a decode GPU.",
         app=Surface(PAGE_QUICK + "; every instance is a lane of the page's figure", high=8)),
    Knob(name="decode_gpus", unit="GPUs", default=1, high=MAX_GPUS, key="decodegpu",
         what="GPUs that only decode (in instances of --decode-tp)", label="Decode GPUs",
         help="GPUs that only decode: a request arrives with its prompt's KV cache and emits "
              "the rest of its tokens.",
         app=Surface(PAGE_QUICK + "; every instance is a lane of the page's figure", high=8)),
    Knob(name="prefill_tp", unit="GPUs", default=None, low=1, high=MAX_GPUS, key="ptp",
         shown_default="the run's --tp", label="Prefill instance tp (0: the sidebar's)",
         what="tensor-parallel GPUs per prefill instance (must divide the prefill GPUs)",
         help="GPUs each prefill instance shards the model over (tensor parallelism): it must "
              "divide the prefill GPUs. 0: the sidebar's tp.",
         app=Surface("a number box cannot be empty, so 0 stands for the sidebar's tp",
                     default=0, low=0, high=8)),
    Knob(name="decode_tp", unit="GPUs", default=None, low=1, high=MAX_GPUS, key="dtp",
         shown_default="the run's --tp", label="Decode instance tp (0: the sidebar's)",
         what="tensor-parallel GPUs per decode instance (must divide the decode GPUs)",
         help="GPUs each decode instance shards the model over (tensor parallelism): it must "
              "divide the decode GPUs. 0: the sidebar's tp.",
         app=Surface("a number box cannot be empty, so 0 stands for the sidebar's tp",
                     default=0, low=0, high=8)),
    # its link key is not `link`: that is the custom GPU's GPU-to-GPU bandwidth
    Knob(name="link", unit="", default=None, choices=(*LINKS, FREE_LINK.id), key="kvlink",
         shown_default="the GPU's own GPU-to-GPU link", label="KV link",
         what=f"the link a KV cache crosses from prefill to decode ({FREE_LINK.id}: no cost)",
         help="Each transfer takes prompt tokens × KV bytes per token / bandwidth + latency "
              "(each link's figures and their source: the Disaggregation page's table).",
         app=Surface("the app opens on the Textbook GPU, whose preset has no GPU-to-GPU link: "
                     "the H100's NVLink 4, where prefill and decode GPUs share a node",
                     default="nvlink4")),
    Knob(name="layerwise_send", unit="", default=False, key="layerwise",
         what="send each layer's KV as the prefill computes it (Splitwise, Mooncake), hiding "
              "the transfer behind the prefill but for its last layer (default off: sent after "
              "the prefill, as DistServe and vLLM's NIXL connector do)",
         label="Send layer by layer",
         help="Off: each prompt's KV is sent once its prefill ends (DistServe, vLLM's NIXL "
              "connector). On: each layer's KV leaves as soon as it is computed (Splitwise, "
              "Mooncake), so only max(time / layers, time − the prefill's time) is left after "
              "the prefill; a prompt that waited for its decode GPU pays it all."),
)}

# Pipeline parallelism's knobs (sim/serving/pipeline.py `Pipeline`): the model's layers split
# over stages, tp x pp GPUs, micro-batches in flight through them. A table of their own, as the
# disaggregation's: they shape where a run is served.
PIPELINE_KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob(name="pp", unit="stages", default=1, high=MAX_STAGES, key="pp",
         label="Pipeline stages (pp)",
         what="pipeline-parallel degree: stages the model's layers are split over, each on --tp "
              "GPUs (GPUs = tp x pp), up to pp micro-batches in flight",
         help="The model's layers split evenly over this many stages, each holding its share "
              "of the weights and of every token's KV; each iteration's batch flows stage by "
              "stage as a micro-batch, up to pp of them in flight, and a stage waiting for its "
              "next one is idle (a pipeline bubble). Layers that do not split evenly go one each to the "
              "stages before the last, as vLLM splits them.",
         app=Surface("the Pipeline page opens on two stages, Sarathi-Serve's example; it draws a "
                     "row per stage for each of three schedules, so at most 8",
                     default=2, high=8)),
    Knob(name="pp_link", unit="", default=None, choices=(*LINKS, FREE_LINK.id), key="pplink",
         shown_default="the GPU's own GPU-to-GPU link (every stage in one node)",
         label="Link between stages",
         what=f"the link a micro-batch's activations cross from one stage to the next "
              f"({FREE_LINK.id}: no cost)",
         help="Each stage sends tokens × hidden × 2 bytes per GPU to the next: bytes / "
              "bandwidth + latency (each link's figures and their source: the Disaggregation "
              "page's table).",
         app=Surface("the app opens on the Textbook GPU, whose preset has no GPU-to-GPU link: "
                     "the H100's NVLink 4, every stage in one node", default="nvlink4")),
)}

# The knobs that are `Limits` fields (named alike): the command line builds Limits from them.
LIMIT_KNOBS = tuple(k for k in KNOBS.values() if k.name in Limits.__dataclass_fields__)
# A link's earlier key -> the key it is now.
OLD_KEYS = {old: k.key for k in KNOBS.values() for old in k.old_keys}


def shaping(scenario: str) -> tuple[str, ...]:
    """The knobs that shape `scenario`'s workload (a flag of another scenario is refused)."""
    return tuple(k.name for k in KNOBS.values() if scenario in k.scenarios)
