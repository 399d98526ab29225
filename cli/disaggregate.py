"""`simulate --disaggregate PREFILL_GPUS:DECODE_GPUS`: the flags of a disaggregated run, the
`Disaggregation` they give, and what `simulate` prints for one (sim/serving/disaggregated.py)."""

from __future__ import annotations

import argparse

from sim.errors import InputError
from sim.knobs import DISAGGREGATION_KNOBS
from sim.serving.disaggregated import (
    DisaggregatedTrace,
    Disaggregation,
    parse_split,
    pool_summaries,
    transfer_times,
)
from sim.serving.metrics import Percentiles, summarize
from sim.units import fmt_bytes, fmt_percent, fmt_seconds

from .flags import knob_flag, refuse

# the knobs --disaggregate's own flags set (the two pools' GPUs come from its value)
OWN_FLAGS = ("prefill_tp", "decode_tp", "link", "layerwise_send")
# simulate's flags that make no sense for a disaggregated run, and why
UNUSED = {
    "trace_out": "its CSV holds one engine's iterations; a disaggregated run has one engine per "
                 "instance (--json holds each pool's figures)",
    "requests_out": "its CSV replays one engine's requests and their times; drop it, or run "
                    "without --disaggregate",
    "mix": "its per-class figures (head-of-line wait among them) are one engine's; give the "
           "mix's lengths as --lengths, or run without --disaggregate",
}
CLASSES_NOTE = ("the trace's request classes are served together: per-class figures are one "
                "engine's, and a disaggregated run shows the whole workload's")


def add_disaggregation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--disaggregate", default=None, metavar="PREFILL_GPUS:DECODE_GPUS",
                   help="serve on two pools of GPUs, one that only prefills and one that only "
                        "decodes, the KV cache sent between them (2:1: two prefill GPUs, one "
                        "decode GPU; default: off, one engine on --tp GPUs)")
    for name in OWN_FLAGS:
        knob_flag(p, DISAGGREGATION_KNOBS[name])


def disaggregation_from(args) -> Disaggregation | None:
    """The flags' Disaggregation (None without --disaggregate; its own flags then refused)."""
    if getattr(args, "disaggregate", None) is None:
        if hasattr(args, "disaggregate"):
            refuse(args, OWN_FLAGS, why="without --disaggregate there is no disaggregated run "
                                        "to shape; add --disaggregate PREFILL_GPUS:DECODE_GPUS")
        return None
    for dest, why in UNUSED.items():
        refuse(args, (dest,), why=f"--disaggregate runs one engine per instance: {why}")
    prefill, decode = parse_split(args.disaggregate)
    return Disaggregation(prefill, decode, args.prefill_tp, args.decode_tp, args.link,
                          args.layerwise_send)


def refuse_streams(scenario: str) -> None:
    """A disaggregated run serves new prompts: the textbook and burst scenarios start with
    streams already decoding on one engine."""
    if scenario in ("textbook", "burst"):
        raise InputError(f"--disaggregate serves new requests (--requests with --qps, or "
                         f"--trace-in); the {scenario} scenario starts with streams already "
                         "decoding on one GPU")


def _percentiles(p: Percentiles) -> dict:
    return {"p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max}


def disaggregated_payload(trace: DisaggregatedTrace, split: Disaggregation) -> dict:
    """simulate's --json for a disaggregated run: the top level's TTFT, TBT and TPOT shape, plus
    kv_transfer_s in the same percentile shape, the link, and each pool's figures."""
    m = summarize(trace)
    pools = pool_summaries(trace)
    moved = trace.decode_instance >= 0
    return {
        "policy": trace.policy, "budget": trace.budget, "iterations": trace.iterations,
        "makespan_s": m.makespan_s, "requests": m.requests, "preemptions": m.preemptions,
        "throughput_tokens_per_s": m.throughput_tokens_per_s, "max_gap_s": m.max_gap_s,
        "ttft_s": _percentiles(m.ttft_s), "tbt_s": _percentiles(m.tbt_s),
        "tpot_s": _percentiles(m.tpot_s),
        "kv_transfer_s": _percentiles(Percentiles.of(transfer_times(trace))),
        "disaggregation": {
            "prefill_gpus": split.prefill_gpus, "decode_gpus": split.decode_gpus,
            "link": trace.link.id, "link_name": trace.link.name,
            "link_bandwidth_bytes_per_s": trace.link.bandwidth,
            "link_latency_s": trace.link.latency_s, "layerwise_send": split.layerwise_send,
            "transfers": int(moved.sum()),
            "kv_bytes_per_transfer_mean": float(trace.kv_bytes[moved].mean()) if moved.any()
            else 0.0,
        },
        "pools": {name: {"instances": p.instances, "tp": p.tp, "gpus": p.instances * p.tp,
                         "utilisation": p.utilisation, "iterations": p.iterations,
                         "queue_s": _percentiles(p.queue_s)}
                  for name, p in pools.items()},
    }


QUEUE_WORDS = {"prefill": "arrival -> first chunk", "decode": "prompt done -> decode accepts it"}


def disaggregated_text(payload: dict, title: str, table) -> list[str]:
    """The lines simulate prints for a disaggregated run (`table` is the output module's)."""
    d, pools = payload["disaggregation"], payload["pools"]
    link = (f"{d['link_name']} ({d['link_bandwidth_bytes_per_s'] / 1e9:,.1f} GB/s one way, "
            f"{d['link_latency_s'] * 1e6:g} us)")
    rows = [(label, *(fmt_seconds(payload[key][q]) for q in ("p50", "p90", "p99", "max")))
            for key, label in (("ttft_s", "TTFT (with the transfer)"), ("tbt_s", "TBT (every gap)"),
                               ("tpot_s", "TPOT"), ("kv_transfer_s", "KV transfer"))]
    pool_rows = [(name, f"{p['gpus']} ({p['instances']} x tp {p['tp']})",
                  fmt_percent(p["utilisation"]), f"{p['iterations']:,}", QUEUE_WORDS[name],
                  fmt_seconds(p["queue_s"]["p50"]), fmt_seconds(p["queue_s"]["p99"]))
                 for name, p in pools.items()]
    send = "layer by layer, during the prefill" if d["layerwise_send"] else "after the prefill"
    per = fmt_bytes(d["kv_bytes_per_transfer_mean"])
    return [title,
            f"{d['transfers']:,} KV transfers over {link}, sent {send}; a transfer = prompt "
            f"tokens x KV bytes per token / bandwidth + latency (mean {per} each)",
            table(rows, ("metric", "p50", "p90", "p99", "max")),
            table(pool_rows, ("pool", "GPUs", "busy", "iterations", "queue", "p50", "p99"))]
