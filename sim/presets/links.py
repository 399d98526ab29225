"""Links a KV cache crosses between GPUs, and the price of one transfer over them.

One table, `LINKS`: the NVLink and PCIe figures of sim/presets/hardware.py (what each GPU preset's
tensor-parallel all-reduce streams through) and the network links between nodes (100 GbE, 200 and
400 Gb/s InfiniBand). Bandwidths are bytes/s in ONE direction per GPU (a transfer is one-way);
datasheets quote NVLink and PCIe with both directions added, and network ports in bits/s.

Latency is the fixed cost of one transfer, round figures of the order NCCL's own cost model uses
for a bulk ("Simple" protocol) message: a few microseconds inside a node, about ten across the
network (NVIDIA/nccl src/graph/tuning.cc, `baseLat` and `hwLat`). For a prompt's KV cache
(megabytes) it is well under 1% of the time; bandwidth sets the price.

A transfer's price: bytes = prompt tokens x KV bytes per token (per GPU, where tensor parallelism
shards the KV heads: each GPU sends its shard over its own link, all at once), time = bytes /
bandwidth + latency. An engine that sends each layer's KV as soon as the layer is computed
overlaps the transfer with the prefill (`exposed_seconds`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.errors import InputError
from sim.presets.hardware import (
    GB,
    INFINITY_FABRIC,
    NVLINK3,
    NVLINK4,
    NVLINK5,
    PCIE4_X16,
    Gpu,
)

US = 1e-6
GBIT = 1e9 / 8   # bytes/s in one Gb/s


@dataclass(frozen=True)
class Link:
    """One link a KV transfer can take: bytes/s one way, seconds of fixed cost, a public source."""
    id: str
    name: str
    bandwidth: float     # bytes/s, one direction, per GPU
    latency_s: float     # the fixed cost of one transfer
    source: str

    def transfer_seconds(self, nbytes: float) -> float:
        """bytes / bandwidth + latency (0 bytes: nothing to send, no cost)."""
        if nbytes <= 0:
            return 0.0
        return nbytes / self.bandwidth + self.latency_s


LINKS: dict[str, Link] = {link.id: link for link in (
    Link("nvlink3", "NVLink 3 (A100)", NVLINK3 * GB, 3 * US,
         "NVIDIA A100 datasheet: 600 GB/s bidirectional, 300 GB/s each way"),
    Link("nvlink4", "NVLink 4 (H100, H200)", NVLINK4 * GB, 3 * US,
         "NVIDIA H100 datasheet: 900 GB/s bidirectional; 450 GB/s each way (NVIDIA/nccl#1374)"),
    Link("nvlink5", "NVLink 5 (B200)", NVLINK5 * GB, 3 * US,
         "NVIDIA HGX B200 datasheet: 1.8 TB/s bidirectional per GPU"),
    Link("infinity-fabric", "Infinity Fabric (MI300X)", INFINITY_FABRIC * GB, 3 * US,
         "AMD MI300X: 7 links x 128 GB/s bidirectional, 448 GB/s each way"),
    Link("pcie4", "PCIe Gen4 x16", PCIE4_X16 * GB, 5 * US,
         "PCI-SIG Gen4 x16: 64 GB/s bidirectional, 32 GB/s each way (NVIDIA L4 and L40S "
         "datasheets)"),
    Link("100gbe", "100 Gb Ethernet (RoCE)", 100 * GBIT, 10 * US,
         "IEEE 802.3 100GBASE: 100 Gb/s per port each way = 12.5 GB/s"),
    Link("ib-hdr", "InfiniBand HDR, 200 Gb/s", 200 * GBIT, 10 * US,
         "NVIDIA ConnectX-6 / Quantum HDR: 200 Gb/s per port each way = 25 GB/s"),
    Link("ib-ndr", "InfiniBand NDR, 400 Gb/s", 400 * GBIT, 10 * US,
         "NVIDIA ConnectX-7 / Quantum-2 NDR: 400 Gb/s per port each way = 50 GB/s"),
)}

FREE_LINK = Link("free", "no cost (an ideal link)", float("inf"), 0.0,
                 "none: a transfer takes no time, to show what the link costs")


def get_link(link_id: str) -> Link:
    """A link of the table, or the ideal `free` one."""
    if link_id == FREE_LINK.id:
        return FREE_LINK
    try:
        return LINKS[link_id]
    except KeyError:
        raise InputError(f"unknown link {link_id!r}; choose one of {', '.join(LINKS)} or "
                         f"{FREE_LINK.id}") from None


def gpu_link(gpu: Gpu) -> Link:
    """The link a GPU preset's own GPU-to-GPU figure names (prefill and decode instances in one
    node, as DistServe places them): the table's link of that bandwidth."""
    for link in LINKS.values():
        if link.bandwidth == gpu.interconnect_bandwidth * 1.0 and gpu.interconnect_bandwidth:
            return link
    raise InputError(f"{gpu.name} has no GPU-to-GPU link in its preset; name one with --link "
                     f"({', '.join(LINKS)})")


@dataclass(frozen=True)
class Transfer:
    """One request's KV hand-off, priced: what moves, over which link, for how long."""
    prompt_tokens: int
    kv_bytes_per_token: float   # per GPU (its shard of the KV heads)
    link: Link
    nbytes: float               # prompt tokens x KV bytes per token
    seconds: float              # nbytes / bandwidth + latency
    exposed_s: float            # of it, what is left once the prefill ends


def price_transfer(prompt_tokens: int, kv_bytes_per_token: float, link: Link, *,
                   layers: int = 1, prefill_s: float = 0.0, layerwise: bool = False) -> Transfer:
    """The hand-off of a `prompt_tokens` prompt's KV over `link`. Sent after the prefill (DistServe,
    vLLM's NIXL connector: the decode side reads the finished KV), all of it is exposed; sent
    layer by layer as the prefill computes each (`layerwise`, as Splitwise and Mooncake do), only
    what the `prefill_s` of compute could not hide, and at least the last layer's share."""
    nbytes = prompt_tokens * kv_bytes_per_token
    seconds = link.transfer_seconds(nbytes)
    exposed = exposed_seconds(seconds, layers, prefill_s) if layerwise else seconds
    return Transfer(prompt_tokens, kv_bytes_per_token, link, nbytes, seconds, exposed)


def exposed_seconds(seconds: float, layers: int, prefill_s: float) -> float:
    """A layer-by-layer send's time after the prefill ends: max(time / layers, time - prefill),
    the last layer's share going out after the last layer is computed."""
    if seconds <= 0:
        return 0.0
    return max(seconds / max(layers, 1), seconds - prefill_s)
