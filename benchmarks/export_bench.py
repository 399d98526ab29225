"""Figure exports: the app's GIF of the Side by side timeline at the default size (900 px, 48
frames, the scenario above it) within GIF_TARGET_S and GIF_TARGET_BYTES on this project's
2-core machine, and a docs-sized PNG of the same figure.

A GIF has two figures that matter, its time and its size, so besides the `cases()` of
`python -m benchmarks` (time only) this runs on its own and prints both, each the median of the
runs, against their targets:

    python -m benchmarks.export_bench [--repeats 5] [--smoke]

It also prints the process's CPU time per run: on a machine shared with other work the wall
clock grows with the load, the CPU time much less.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from charts import export, film
from charts.theme import Look
from charts.views import timeline
from ui.shell.scenario import exported, scenario_from

from .smoke import announce

GIF_TARGET_S = 5.0
GIF_TARGET_BYTES = 1.5e6
SMOKE_FRAMES = 4     # --smoke: a GIF this short, once


def side_by_side():
    """The Side by side page's figure at the defaults, captioned as the app's download is."""
    s = scenario_from({})
    lanes = timeline(s.run(s.unchunked, 50_000), s.run(s.chunked, 50_000), "prompt")
    scenario = exported({})
    return lanes.figure(Look(), 900).captioned(*scenario.caption), lanes.t_max


def cases(small: bool = False):
    figure, t_max = side_by_side()
    frames = SMOKE_FRAMES if small else film.GIF_FRAMES
    return [
        (f"export: {film.GIF_FRAMES}-frame GIF, Side by side at the defaults (900 px)",
         GIF_TARGET_S, lambda: film.gif(figure, t_max, frames)),
        ("export: PNG at 2x, same figure", None, lambda: export.png(figure)),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.export_bench")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true",
                        help=f"one {SMOKE_FRAMES}-frame GIF: does the benchmark still run?")
    args = parser.parse_args(argv)
    repeats, frames = (1, SMOKE_FRAMES) if args.smoke else (args.repeats, film.GIF_FRAMES)
    figure, t_max = side_by_side()
    film.gif(figure, t_max, frames=2)          # the renderer's start, once, as in the app
    seconds, cpu, sizes = [], [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        data = film.gif(figure, t_max, frames)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        sizes.append(len(data))
    wall, size = statistics.median(seconds), statistics.median(sizes)
    if args.smoke:
        announce(f"one {frames}-frame GIF")
    print(f"{frames}-frame GIF, Side by side at the defaults (900 px), median of {repeats}:")
    print(f"  time {wall:.2f} s (min {min(seconds):.2f} s, CPU {statistics.median(cpu):.2f} s) "
          f"target < {GIF_TARGET_S:g} s: {'ok' if wall < GIF_TARGET_S else 'SLOWER THAN TARGET'}")
    print(f"  size {size / 1e6:.3f} MB target < {GIF_TARGET_BYTES / 1e6:g} MB: "
          f"{'ok' if size < GIF_TARGET_BYTES else 'LARGER THAN TARGET'}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6
    print(f"  peak resident memory of this process: {peak_mb:,.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
