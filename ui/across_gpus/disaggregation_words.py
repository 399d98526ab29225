"""The Disaggregation page's words (no Streamlit): which setup meets more requests' targets at the
page's rate and why, the KV transfer's arithmetic, and goodput's verdict, each sentence chosen by
what the runs measured, so it holds away from the defaults too.

Every number here is read from the runs (sim/serving/metrics.py `request_times` of the
disaggregated trace and of each colocated instance's) or priced by sim/presets/links.py
(`price_transfer`), the same arithmetic the simulation charges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.cost.iteration import CostModel
from sim.presets.links import Link, price_transfer
from sim.serving.disaggregated import DisaggregatedTrace, pool_summaries, transfer_times
from sim.serving.metrics import request_times
from sim.studies.capacity import GoodputComparison, GoodputSlo, search_words
from sim.units import fmt_bytes, fmt_counted, fmt_percent, fmt_seconds, shown_same

from ..shell.glossary import term

DISAGGREGATED, COLOCATED = "disaggregated", "colocated"
LINK_SMALL = 0.05   # a median transfer under this share of the median TTFT "costs little"
WAITED = "its iteration in progress, or its KV or seats full"   # why a decode GPU takes one late


@dataclass(frozen=True)
class Outcome:
    """One setup's run at the page's rate, judged by goodput's two targets."""
    setup: str
    gpus: int
    requests: int
    met: float            # share of requests meeting both targets
    ttft_missed: float    # share over the TTFT target
    tpot_missed: float    # share over the TPOT target
    ttft_p50: float
    ttft_p90: float
    tpot_p90: float


def outcome(setup: str, gpus: int, traces: Sequence, slo: GoodputSlo) -> Outcome:
    """`traces`' requests together (one disaggregated run, or each colocated instance's), as
    goodput judges them: a request with no TPOT (one token) meets its TPOT target."""
    times = [request_times(t) for t in traces]
    ttft = np.concatenate([t.ttft_s for t in times])
    tpot = np.concatenate([t.tpot_s for t in times])
    late, slow = ttft > slo.ttft_s, tpot > slo.tpot_s
    has_tpot = tpot[~np.isnan(tpot)]
    return Outcome(setup, gpus, len(ttft), float(np.mean(~late & ~slow)), float(np.mean(late)),
                   float(np.mean(slow)), float(np.median(ttft)), float(np.percentile(ttft, 90)),
                   float(np.percentile(has_tpot, 90)) if len(has_tpot) else float("nan"))


def shares_differ(a: float, b: float) -> bool:
    """Two shares that read differently on screen."""
    return fmt_percent(a) != fmt_percent(b)


def split_words(prefill_gpus: int, decode_gpus: int) -> str:
    return f"{fmt_counted(prefill_gpus, 'prefill GPU')} + {fmt_counted(decode_gpus, 'decode GPU')}"


def setups_words(prefill_gpus: int, decode_gpus: int, prefill_tp: int, decode_tp: int, tp: int,
                 engine: str) -> str:
    """How each setup splits the GPUs into instances, each pool's tp said beside its pool (the
    colocated instances take the sidebar's tp, the pools their own)."""
    gpus = prefill_gpus + decode_gpus
    # GPUs the tp does not divide have no instance count: the page refuses them under this
    colocated = (f"as {fmt_counted(gpus // tp, 'instance')}" if gpus % tp == 0 else "in instances")
    return (f"Disaggregated: {split_words(prefill_gpus, decode_gpus)}, in instances of "
            f"{fmt_counted(prefill_tp, 'GPU')} (prefill) and {fmt_counted(decode_tp, 'GPU')} "
            f"(decode). Colocated: the same {gpus} GPUs {colocated} of "
            f"{fmt_counted(tp, 'GPU')} (the sidebar's tp) running {engine}, requests round-robin.")


def search_size_words(max_runs: int, requests: int, disaggregated_instances: int,
                      colocated_instances: int) -> str:
    """What goodput's search may run: rates per setup, and the instance runs that makes, the
    count the work estimate after it states (each instance is simulated as its own run)."""
    return (f"Up to {max_runs} rates per setup, each a run of {requests:,} requests in which "
            f"every instance is simulated on its own: {max_runs} × "
            f"({disaggregated_instances} disaggregated + {colocated_instances} colocated "
            "instances)")


def verdict(d: Outcome, c: Outcome, slo: GoodputSlo, qps: float) -> str:
    """Which setup meets both targets for more requests at this rate."""
    lead = (f"At {qps:g} requests/s, {fmt_percent(d.met)} of the {d.requests:,} requests meet "
            f"both targets disaggregated and {fmt_percent(c.met)} colocated on the same "
            f"{c.gpus} GPUs")
    if not shares_differ(d.met, c.met):
        if d.met >= slo.share and c.met >= slo.share:
            return (f"{lead}: a tie at this rate, both at goodput's {slo.share:.0%} or more "
                    "(goodput, below, says which goes further).")
        if d.met < slo.share and c.met < slo.share:
            return f"{lead}: a tie at this rate, neither at goodput's {slo.share:.0%}."
        return f"{lead}: a tie at this rate."
    winner = "disaggregation" if d.met > c.met else "colocation"
    both = d.met >= slo.share and c.met >= slo.share
    tail = (f" (both reach goodput's {slo.share:.0%}: goodput, below, says which goes "
            "further)" if both else "")
    return f"{lead}: **{winner} wins at this rate**{tail}."


def why(o: Outcome, slo: GoodputSlo) -> str:
    """Which target the setup's requests miss, with its p90 (Markdown with glossary marks: the
    page's first p90)."""
    name = o.setup.capitalize()
    return (f"{name}, {fmt_percent(o.ttft_missed)} of requests miss the TTFT target of "
            f"{fmt_seconds(slo.ttft_s)} ({term('p90')} TTFT {fmt_seconds(o.ttft_p90)}) and "
            f"{fmt_percent(o.tpot_missed)} the TPOT target of {fmt_seconds(slo.tpot_s)} "
            f"({term('p90')} TPOT {fmt_seconds(o.tpot_p90)}).")


def causes(trace: DisaggregatedTrace, d: Outcome, c: Outcome) -> list[str]:
    """What the runs show behind the numbers: the prefill pool's queue, the decode pool's, the
    colocated decodes' gaps beside prompt chunks; each said only where the runs show it."""
    pools = pool_summaries(trace)
    said = []
    prefill, decode = pools["prefill"], pools["decode"]
    lead = (f"Disaggregated, the prefill pool is busy {fmt_percent(prefill.utilisation)} of "
            f"the time and a prompt waits {fmt_seconds(prefill.queue_s.p50)} (median) for its "
            "first chunk")
    if not len(transfer_times(trace)):
        said.append(f"{lead}; no request has a second token to emit, so none moves to the "
                    "decode pool.")
    else:
        said.append(f"{lead}; the decode pool is busy {fmt_percent(decode.utilisation)} of the "
                    f"time and a prefilled request waits {fmt_seconds(decode.queue_s.p50)} "
                    "(median) for a decode GPU to take it (free KV and a seat).")
    if not shown_same(c.tpot_p90, d.tpot_p90):
        if c.tpot_p90 > d.tpot_p90:
            said.append(f"Colocated, the prompts' chunks run on the same GPUs as the decodes "
                        f"and lengthen the gaps between their tokens: p90 TPOT "
                        f"{fmt_seconds(c.tpot_p90)}, against {fmt_seconds(d.tpot_p90)} on GPUs "
                        "that only decode.")
        else:
            said.append(f"The decode-only GPUs do not give smoother tokens here: p90 TPOT "
                        f"{fmt_seconds(d.tpot_p90)} disaggregated, {fmt_seconds(c.tpot_p90)} "
                        "colocated, where the decode GPUs hold all the streams between them.")
    return said


def prefill_rate(trace: DisaggregatedTrace) -> tuple[float, float]:
    """(the prefill pool's iteration time per prompt, the prompts a second its instances finish
    at that price): busy time / prompts, and instances / that."""
    busy = sum(float(np.sum(t.end_s - t.start_s)) for t in trace.prefill)
    per_prompt = busy / len(trace.arrival_s)
    return per_prompt, len(trace.prefill) / per_prompt if per_prompt > 0 else float("inf")


def prefill_rate_words(trace: DisaggregatedTrace, prompt: int, qps: float) -> str:
    """What one prompt of this length costs the prefill pool, and the rate that allows."""
    per_prompt, rate = prefill_rate(trace)
    instances = len(trace.prefill)
    pool = fmt_counted(instances, "prefill instance")
    verdict = ("fewer than arrive" if rate < qps else "more than arrive")
    finish = "finish" if instances != 1 else "finishes"
    return (f"Each {prompt:,}-token prompt takes the prefill pool {fmt_seconds(per_prompt)} of "
            f"iteration time (its busy time / its {len(trace.arrival_s):,} prompts), so its "
            f"{pool} {finish} about {rate:.3g} prompts a second at that price, {verdict} "
            f"({qps:g} a second).")


def link_words(trace: DisaggregatedTrace, d: Outcome) -> str:
    """What the hand-offs cost against the disaggregated TTFT ('' when no request moved)."""
    moved = transfer_times(trace)
    if not len(moved):
        return ""
    median = float(np.median(moved))
    share = median / d.ttft_p50 if d.ttft_p50 > 0 else float("nan")
    lead = (f"Each hand-off crosses {trace.link.name}: the median transfer takes "
            f"{fmt_seconds(median)}, {fmt_percent(share)} of the disaggregated median TTFT "
            f"({fmt_seconds(d.ttft_p50)})")
    cost = ("so the link costs little here: the pools set the TTFT" if share < LINK_SMALL else
            "so the link is a visible part of the wait for the first token here")
    return " ".join(x for x in (f"{lead}, {cost}.", layerwise_words(trace)) if x)


def layerwise_words(trace: DisaggregatedTrace) -> str:
    """Sent layer by layer, the exposed part beside the whole transfer: a hand-off whose decode
    GPU took it as its prefill ended paid only max(time / layers, time − prefill) after it; one
    that waited for a decode GPU paid the whole ('' when the KV is sent after the prefill)."""
    moved = trace.decode_instance >= 0
    if not trace.layerwise_send or not moved.any():
        return ""
    at_once = (trace.send_start_s <= trace.prefill_end_s)[moved]
    whole = float(np.median([trace.link.transfer_seconds(b) for b in trace.kv_bytes[moved]]))
    exposed = trace.transfer_s[moved][at_once]
    sent = len(at_once)
    lead = (f"Sent layer by layer, the whole transfer takes {fmt_seconds(whole)} (median); "
            "a hand-off whose decode GPU took it as its prefill ended has only max(time / "
            "layers, time − the prefill) left after it")
    if not at_once.any():
        return (f"{lead}, but none of the {sent:,} was taken then: each waited for a decode GPU "
                f"({WAITED}) and paid the whole transfer.")
    waited = sent - int(at_once.sum())
    rest = (f"; the other {waited:,} waited for a decode GPU ({WAITED}) and paid the whole "
            "transfer"
            if waited else "")
    return (f"{lead}: {int(at_once.sum()):,} of the {sent:,} were, with "
            f"{fmt_seconds(float(np.median(exposed)))} (median) exposed{rest}.")


@dataclass(frozen=True)
class Arithmetic:
    """One prompt's KV hand-off, priced as the run prices it: its lines in words."""
    prompt: int
    per_token: float
    nbytes: float
    seconds: float
    link: Link

    def lines(self, cost: CostModel) -> list[str]:
        m = cost.model
        shards = f" / {cost.kv_shards} GPUs (tensor parallelism shards the KV heads)" \
            if cost.kv_shards > 1 else ""
        per = (f"KV bytes per token = 2 (key and value) × {m.layers} layers × {m.kv_dim:,} "
               f"(KV heads × head dim) × {m.kv_bytes_per_element:g} bytes{shards} = "
               f"{self.per_token:,.0f} bytes")
        size = (f"bytes = {self.prompt:,} prompt tokens × {self.per_token:,.0f} bytes = "
                f"{fmt_bytes(self.nbytes)}")
        if not np.isfinite(self.link.bandwidth):
            return [per, size, "time = none: an ideal link, to show what the transfer costs "
                               "by its absence"]
        time = (f"time = {fmt_bytes(self.nbytes)} / {fmt_bytes(self.link.bandwidth)}/s "
                f"({self.link.name}, one way) + {fmt_seconds(self.link.latency_s)} latency = "
                f"{fmt_seconds(self.seconds)}")
        return [per, size, time]


def arithmetic(prompt: int, cost: CostModel, link: Link) -> Arithmetic:
    t = price_transfer(prompt, cost.kv_bytes_per_token, link)
    return Arithmetic(prompt, t.kv_bytes_per_token, t.nbytes, t.seconds, link)


def search_outcomes(comparison: GoodputComparison, policy_label: str, prefill_gpus: int,
                    decode_gpus: int, colocated_instances: int, tp: int) -> list[str]:
    """Each setup's search, how far it got, in the page's words (the policy's label, 'targets',
    'requests/s', '≤'): the command line's reason, written by the same function."""
    slo = comparison.slo
    targets = (f"both targets for at least {slo.share:.0%} of requests (TTFT ≤ "
               f"{fmt_seconds(slo.ttft_s)}, TPOT ≤ {fmt_seconds(slo.tpot_s)})")
    names = (f"{policy_label} disaggregated on {split_words(prefill_gpus, decode_gpus)}",
             f"{policy_label} colocated as {fmt_counted(colocated_instances, 'instance')} of "
             f"{fmt_counted(tp, 'GPU')}")
    return [search_words(r.result, name, targets, unit="requests/s") + "."
            for r, name in zip((comparison.disaggregated, comparison.colocated), names)]


def goodput_words(comparison: GoodputComparison, requests: int) -> str:
    """Goodput's verdict: each setup's, in total and per GPU, and which serves more per GPU;
    where a search found its limit between two rates, that the runs of `requests` requests
    judged it (a longer run near the limit queues more)."""
    return " ".join(x for x in (_goodput_verdict(comparison), run_length_words(comparison,
                                                                                requests)) if x)


def run_length_words(comparison: GoodputComparison, requests: int) -> str:
    """Near a limit the queue grows over the run, so a run of `requests` requests can meet both
    targets for more of them than a longer one at the same rate: said where a search found a
    goodput below a rate that failed ('' where none did: no limit was bracketed)."""
    bracketed = [r.result for r in (comparison.disaggregated, comparison.colocated)
                 if r.result.capacity_qps > 0 and r.result.failed_qps is not None]
    if not bracketed:
        return ""
    return (f"Each rate was judged by one run of {requests:,} requests. Near a setup's limit its "
            "queue keeps growing through the run, so a longer run at the same rate can meet both "
            "targets for fewer of its requests: these goodputs hold for runs of this length, and "
            "more requests (the box above) can find them lower.")


def _goodput_verdict(comparison: GoodputComparison) -> str:
    d, c = comparison.disaggregated, comparison.colocated
    lead = (f"Goodput (the highest rate at which at least {comparison.slo.share:.0%} of "
            f"requests meet both targets): disaggregated {d.result.capacity_qps:.3g} requests/s "
            f"on {d.gpus} GPUs ({d.per_gpu:.3g} per GPU), colocated "
            f"{c.result.capacity_qps:.3g} requests/s on {c.gpus} GPUs ({c.per_gpu:.3g} per GPU)")
    ratio = comparison.ratio
    if ratio is None:
        return f"{lead}; no ratio: the colocated search proved no rate, or a search was cut short."
    if f"{ratio:.2f}" == "1.00":
        return f"{lead}: per GPU, a tie ({ratio:.2f}×)."
    if ratio > 1:
        return (f"{lead}: **disaggregation serves {ratio:.2f}× as much per GPU** "
                f"({d.per_gpu:.3g} / {c.per_gpu:.3g}).")
    return (f"{lead}: **colocation serves {1 / ratio:.2f}× as much per GPU** "
            f"({c.per_gpu:.3g} / {d.per_gpu:.3g}).")
