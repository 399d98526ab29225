"""What the `--against` benchmarks share (first_render, engine_bench): this tree and another
measured in turns, so that both see the same load, and the ratio of their medians."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Comparison:
    """Printed rows of the two trees' medians, their ratio (this / other) and the load average,
    then the ratios' median and range."""
    label_width: int
    decimals: int
    ratios: list[float] = field(default_factory=list)

    def measure(self, label: str, repeats: int, sample: Callable[[int], float]) -> None:
        """`repeats` samples of each side (0: this tree, 1: the other), `sample(side)` taking
        one; the sides take turns, and which goes first alternates too."""
        samples: tuple[list, list] = ([], [])
        for turn in range(repeats):
            for side in ((0, 1) if turn % 2 == 0 else (1, 0)):
                samples[side].append(sample(side))
        this, other = (statistics.median(s) for s in samples)
        self.ratios.append(this / other)
        width = self.decimals + 4
        print(f"{label:<{self.label_width}} {this:{width}.{self.decimals}f} "
              f"{other:{width}.{self.decimals}f} {this / other:5.2f}x  {os.getloadavg()[0]:.1f}",
              flush=True)

    def summary(self, over: str) -> None:
        print(f"this tree / the other: median over {over} {statistics.median(self.ratios):.2f}x, "
              f"from {min(self.ratios):.2f}x to {max(self.ratios):.2f}x")
