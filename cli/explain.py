"""`worked-example` and `cost`: the arithmetic of the source articles, and one iteration's price."""

from __future__ import annotations

from dataclasses import asdict

from sim.cost.iteration import Chunk, Composition
from sim.errors import InputError, check_number
from sim.studies.worked_example import DEFAULTS, worked_example
from sim.units import fmt_bytes, fmt_flops, fmt_seconds

from .common import add_hardware_args, cost_model_from, emit, finite, numbers, table


# --- worked-example -------------------------------------------------------------------------
def _worked_example(args) -> None:
    ex = worked_example(
        params=args.params, bytes_per_param=args.bytes_per_param, peak_tflops=args.peak_tflops,
        bandwidth_tbps=args.bandwidth_tbps, decodes=args.decodes, context=args.context,
        prompt=args.prompt,
        budgets=numbers(args.budgets), layers=args.layers, kv_heads=args.kv_heads,
        head_dim=args.head_dim, kv_bytes=args.kv_bytes, long_prompt=args.long_prompt,
        burst=args.burst)
    rows = [(s.title, s.formula, s.substituted, s.display) for s in ex.steps]
    notes = [f"* {s.title}: {s.seed_note}" for s in ex.steps if s.seed_note]
    text = table(rows, ("step", "formula", "substituted", "result"))
    emit(args, finite(ex.to_json()), text + ("\n\nWhere seed 001 rounds or slips:\n" + "\n".join(notes)
                                              if notes else ""))


def register_worked_example(sub) -> None:
    p = sub.add_parser("worked-example", help="seed 001's arithmetic, step by step")
    d = DEFAULTS
    for flag, key in (("--params", "params"), ("--bytes-per-param", "bytes_per_param"),
                      ("--peak-tflops", "peak_tflops"), ("--bandwidth-tbps", "bandwidth_tbps"),
                      ("--decodes", "decodes"), ("--context", "context"), ("--prompt", "prompt"),
                      ("--layers", "layers"),
                      ("--kv-heads", "kv_heads"), ("--head-dim", "head_dim"),
                      ("--kv-bytes", "kv_bytes"), ("--long-prompt", "long_prompt"),
                      ("--burst", "burst")):
        p.add_argument(flag, type=float, default=d[key])
    p.add_argument("--budgets", default=",".join(str(b) for b in d["budgets"]),
                   help="comma-separated token budgets")
    p.set_defaults(func=_worked_example)


# --- cost -----------------------------------------------------------------------------------
def _cost(args) -> None:
    model = cost_model_from(args)
    decodes = check_number("--decodes", args.decodes, low=0, low_inclusive=True, high=1e6, integer=True)
    context = check_number("--context", args.context, low=0, low_inclusive=True, high=1e8, integer=True)
    chunk = check_number("--chunk", args.chunk, low=0, low_inclusive=True, high=1e8, integer=True)
    prefix = check_number("--prefix", args.prefix, low=0, low_inclusive=True, high=1e8, integer=True)
    if decodes + chunk == 0:
        raise InputError("an iteration needs --decodes > 0 or --chunk > 0")
    comp = Composition((context,) * decodes, (Chunk(chunk, prefix, args.last),) if chunk else ())
    c = model.price(comp)
    payload = {"time_s": c.time_s, "compute_s": c.compute_s, "memory_s": c.memory_s,
               "flops": c.flops, "bytes": c.bytes, "bound": c.bound,
               "components": {k: asdict(v) for k, v in c.components.items()},
               "overhead_s": c.overhead_s}
    rows = [(name, fmt_flops(v.flops), fmt_bytes(v.bytes), fmt_seconds(v.time_s))
            for name, v in c.components.items()]
    if model.tp > 1:
        payload.update(tp=model.tp, allreduce_s=c.allreduce_s)
        rows.append((f"all-reduce ({model.tp} GPUs)", "", "", fmt_seconds(c.allreduce_s)))
    rows.append(("overhead", "", "", fmt_seconds(c.overhead_s)))
    rows.append(("iteration", fmt_flops(c.flops), fmt_bytes(c.bytes), fmt_seconds(c.time_s)))
    rule = "max(FLOPs / peak, bytes / bandwidth)" if model.calibration is None else \
        "the sum over kernels of their achievable time (below)"
    text = (f"{model.gpu.name} · {model.model.name} · {args.mode} · {decodes} decodes at context "
            f"{context:,} + chunk {chunk:,} on prefix {prefix:,}"
            + (f" · TP {model.tp} (per GPU)" if model.tp > 1 else "") + "\n"
            + table(rows, ("component", "FLOPs", "bytes", "time alone")) +
            f"\ncompute {fmt_seconds(c.compute_s)} vs memory {fmt_seconds(c.memory_s)}: "
            f"{c.bound}-bound; time = {rule}"
            + (" + all-reduce" if model.tp > 1 else "") + " + overhead")
    if c.factors:
        payload["factors"] = [asdict(f) for f in c.factors]
        text += "\n\nfrom the roofline to the calibrated time:\n" + table(
            [(f.name, f"+{fmt_seconds(f.added_s)}", f.why) for f in c.factors],
            ("factor", "adds", "why"))
    emit(args, payload, text)


def register_cost(sub) -> None:
    p = sub.add_parser("cost", help="the cost of one iteration")
    add_hardware_args(p)
    p.add_argument("--decodes", type=float, default=0)
    p.add_argument("--context", type=float, default=0, help="each decode's cached context")
    p.add_argument("--chunk", type=float, default=0, help="prefill chunk tokens")
    p.add_argument("--prefix", type=float, default=0, help="tokens already cached before the chunk")
    p.add_argument("--last", action="store_true", help="the chunk ends its prompt (emits a token)")
    p.set_defaults(func=_cost)


