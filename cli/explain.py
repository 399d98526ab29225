"""`worked-example` and `cost`: the arithmetic of the source articles, and one iteration's price."""

from __future__ import annotations

from dataclasses import asdict

from sim.cost.iteration import Chunk, Composition
from sim.errors import InputError
from sim.serving.policies import POLICIES, get_policy
from sim.studies.worked_example import DEFAULTS, RANGES, SOURCE_ARTICLE, worked_example
from sim.units import fmt_bytes, fmt_flops, fmt_seconds

from .common import add_hardware_args, cost_model_from
from .flags import choice, number, number_list, paragraph, refuse
from .output import emit, finite, table


# --- worked-example -------------------------------------------------------------------------
def _worked_example(args) -> None:
    ex = worked_example(
        params=args.params, bytes_per_param=args.bytes_per_param, peak_tflops=args.peak_tflops,
        bandwidth_tbps=args.bandwidth_tbps, decodes=args.decodes, context=args.context,
        prompt=args.prompt, budgets=args.budgets, layers=args.layers, kv_heads=args.kv_heads,
        head_dim=args.head_dim, kv_bytes=args.kv_bytes, long_prompt=args.long_prompt,
        burst=args.burst)
    rows = [(s.title, s.formula, s.substituted, s.display) for s in ex.steps]
    notes = [f"* {s.title}: {s.seed_note}" for s in ex.steps if s.seed_note]
    text = table(rows, ("step", "formula", "substituted", "result"), args.wide)
    if notes:
        text += (f"\n\nWhere the source article (\"{SOURCE_ARTICLE}\", whose worked example this is) "
                 "rounds or slips:\n" + "\n".join(notes))
    emit(args, finite(ex.to_json()), text)


# the continuous inputs: (flag, key, what, unit)
AMOUNTS = (("--params", "params", "model parameters", "parameters"),
           ("--bytes-per-param", "bytes_per_param", "bytes per weight (2: bf16)", "bytes"),
           ("--peak-tflops", "peak_tflops", "the GPU's dense peak", "TFLOP/s"),
           ("--bandwidth-tbps", "bandwidth_tbps", "the GPU's memory bandwidth", "TB/s"),
           ("--kv-bytes", "kv_bytes", "bytes per KV cache element (2: bf16)", "bytes"))
# the counts: (flag, key, what, unit, lowest)
COUNTS = (("--decodes", "decodes", "requests streaming (one decode token each per iteration)",
           "requests", 0),
          ("--context", "context", "each streaming request's cached context", "tokens", 0),
          ("--prompt", "prompt", "the new prompt's length", "tokens", 1),
          ("--layers", "layers", "transformer layers", "layers", 1),
          ("--kv-heads", "kv_heads", "KV heads per layer", "heads", 1),
          ("--head-dim", "head_dim", "each head's dimension", "elements", 1),
          ("--long-prompt", "long_prompt", "the long prompt whose chunk re-reads are priced",
           "tokens", 1),
          ("--burst", "burst", "prompts arriving together in the burst drain", "prompts", 1))


def register_worked_example(sub) -> None:
    p = sub.add_parser("worked-example", help="the source article's worked example, step by step",
                       description=paragraph(f"""
        The worked example of the source article ("{SOURCE_ARTICLE}"): an 8-billion-parameter model on
        an illustrative 400 TFLOP/s, 3 TB/s GPU, 64 requests streaming while one 8,192-token
        prompt arrives. Each step prints its formula, the numbers substituted and the result
        with its unit: the weight read, the decode step, the whole prompt in one iteration, then
        per token budget the chunk (budget − decodes), one iteration, the iterations to prefill
        the prompt, its time to first token and the stall reduction; then KV bytes, the KV
        re-read by later chunks and a burst's drain. Any input can be changed; at the article's
        own inputs the places where it rounds or slips are listed below the table."""))
    d = DEFAULTS
    for flag, key, what, unit in AMOUNTS:
        r = RANGES[key]
        number(p, flag, what, unit=unit, default=d[key], low=r["low"], high=r["high"])
    for flag, key, what, unit, lowest in COUNTS:
        number(p, flag, what, unit=unit, default=d[key], low=lowest, high=1e9, whole=True)
    number_list(p, "--budgets", "token budgets per iteration, decodes included", unit="tokens",
                default=d["budgets"], low=1, high=1e9, most=32)
    p.set_defaults(func=_worked_example)


# --- cost -----------------------------------------------------------------------------------
def _cost(args) -> None:
    if args.decodes == 0:
        refuse(args, ("context",), why="--decodes is 0, so no decode has a context")
    if args.chunk == 0:
        refuse(args, ("prefix", "last"), why="--chunk is 0, so there is no prefill chunk")
    if args.decodes + args.chunk == 0:
        raise InputError("an iteration needs --decodes > 0 or --chunk > 0")
    engine = get_policy(args.policy)
    model = cost_model_from(args).for_engine(engine.overhead)
    decodes, context, chunk, prefix = args.decodes, args.context, args.chunk, args.prefix
    comp = Composition((context,) * decodes, (Chunk(chunk, prefix, args.last),) if chunk else ())
    c = model.price(comp)
    payload = {"time_s": c.time_s, "compute_s": c.compute_s, "memory_s": c.memory_s,
               "flops": c.flops, "bytes": c.bytes, "bound": c.bound,
               "components": {k: asdict(v) for k, v in c.components.items()},
               "overhead_s": c.overhead_s,
               "engine": {"policy": engine.name, "release": engine.overhead.release,
                          "cpu_s": model.overhead_s, "overlapped": engine.overhead.overlapped,
                          "rule": engine.overhead.rule}}
    rows = [(name, fmt_flops(v.flops), fmt_bytes(v.bytes), fmt_seconds(v.time_s))
            for name, v in c.components.items()]
    if model.tp > 1:
        payload.update(tp=model.tp, allreduce_s=c.allreduce_s)
        rows.append((f"all-reduce ({model.tp} GPUs)", "", "", fmt_seconds(c.allreduce_s)))
    rows.append((f"overhead ({engine.overhead.kind})", "", "", fmt_seconds(c.overhead_s)))
    rows.append(("iteration", fmt_flops(c.flops), fmt_bytes(c.bytes), fmt_seconds(c.time_s)))
    rule = "max(FLOPs / peak, bytes / bandwidth)" if model.calibration is None else \
        "the sum over kernels of their achievable time (below)"
    text = (f"{model.gpu.name} · {model.model.name} · {args.mode} · {decodes:,} streams at context "
            f"{context:,} + chunk {chunk:,} on prefix {prefix:,}"
            + (f" · TP {model.tp} (per GPU)" if model.tp > 1 else "") + "\n"
            + table(rows, ("component", "FLOPs", "bytes", "time alone"), args.wide) +
            f"\ncompute {fmt_seconds(c.compute_s)} vs memory {fmt_seconds(c.memory_s)}: "
            f"{c.bound}-bound; time = {rule}"
            + (" + all-reduce" if model.tp > 1 else "") + " + overhead"
            + f"\noverhead: {fmt_seconds(model.overhead_s)} of CPU per iteration on "
              f"{engine.overhead.release} ({engine.overhead.kind}): iteration = "
              f"{engine.overhead.rule} = {fmt_seconds(c.time_s)}; {c.overhead_s / c.time_s:.0%} of "
              "it is overhead")
    if c.factors:
        payload["factors"] = [asdict(f) for f in c.factors]
        text += "\n\nfrom the roofline to the calibrated time:\n" + table(
            [(f.name, f"+{fmt_seconds(f.added_s)}", f.why) for f in c.factors],
            ("factor", "adds", "why"), args.wide)
    emit(args, payload, text)


def register_cost(sub) -> None:
    p = sub.add_parser("cost", help="the cost of one iteration", description=paragraph("""
        The price of one iteration (one batched forward pass) on a GPU and model: its FLOPs, bytes,
        compute time and memory time, whether it is compute- or memory-bound, and each component
        (the weight GEMMs, attention, the LM head; with --tp the all-reduces; the per-iteration
        overhead). The iteration holds --decodes decode rows, each over --context cached tokens,
        and optionally a prefill chunk of --chunk tokens on top of --prefix cached ones. Times
        are in seconds (shown in ms or µs), FLOPs and bytes per GPU. With --mode calibrated the
        factors that lift the roofline to the fitted kernel times are listed one by one."""))
    add_hardware_args(p)
    number(p, "--decodes", "decode rows in the iteration", unit="requests", default=0, low=0,
           high=1e6, whole=True)
    number(p, "--context", "each decode's cached context", unit="tokens", default=0, low=0,
           high=1e8, whole=True)
    number(p, "--chunk", "prefill chunk tokens", unit="tokens", default=0, low=0, high=1e8,
           whole=True)
    number(p, "--prefix", "tokens of the chunk's prompt already cached", unit="tokens",
           default=0, low=0, high=1e8, whole=True)
    choice(p, "--policy", "the engine whose loop runs the iteration: synchronous ones add "
           "their CPU overhead to the GPU time, overlapped ones hide it behind it", POLICIES,
           default="vllm-v0")
    p.add_argument("--last", action="store_true",
                   help="the chunk ends its prompt, so it emits a token (an LM-head row; "
                        "default off)")
    p.set_defaults(func=_cost)
