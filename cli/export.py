"""`python -m sim export`: the app's figures as files, from the same flags as `simulate`.

    python -m sim export --view side-by-side --mode simple
    # out/side-by-side_..._budget-576_vllm-v0-vs-sarathi_simple_light.png

Views: `side-by-side` (both lanes' iterations and token streams), `streams` (the token streams only),
`roofline` (the roofline with the scenario's iterations, over the iteration-time vs budget curve,
over the GEMM tile steps in a cost mode with tiles: calibrated), as the Roofline page draws them.
Formats: png, svg, gif (gif animates the clock of side-by-side and streams). The top lane runs
`--unchunked`, the bottom lane `--policy`. Two lines above the figure state its scenario (GPU,
model, prompt, streams, budget, cost mode). Without `--out` the file goes to out/ (ignored by git), named
by the view, the scenario, the policies, every other flag given that changes the figure and the
theme (charts.export.Scenario.file_stem, as the app's downloads are); a file git tracks (the README's figures in docs/)
is overwritten only with `--force`. The chart packages are imported inside the command, so
`import sim` never imports Altair.
"""

from __future__ import annotations

import os

from sim.errors import InputError, check_number
from sim.knobs import KNOBS, LIMIT_KNOBS
from sim.serving.workloads import textbook

from .common import add_run_args, cost_model_from, lane_args, run_from
from .export_effort import check_export_work
from .flags import flag_name, paragraph, refuse
from .output import emit
from .paths import output_file

VIEWS = ("side-by-side", "streams", "roofline")
FORMATS = ("png", "svg", "gif")
ANIMATED = ("side-by-side", "streams")
OUT_DIR = "out"   # ignored by git (.gitignore)


def _format(args) -> str:
    fmt = args.format or os.path.splitext(args.out or "")[1].lstrip(".").lower() or "png"
    if fmt not in FORMATS:
        raise InputError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "gif" and args.view not in ANIMATED:
        raise InputError(f"gif animates the clock of {' and '.join(ANIMATED)}; "
                         f"export --view {args.view} as png or svg")
    return fmt


def _look(args):
    from charts.theme import Look

    return Look(presenter=args.presenter, dark=args.dark)


# Flags an export's name spells in its own words (export.Scenario's fields, the theme) or that
# say only where and how the file is written; every other flag given joins the name.
NAMED_IN_EXPORTS = ("gpu", "model", "tp", "prompt", "decodes", "context", "budget", "mode", "policy",
                    "unchunked", "presenter", "dark", "view", "out", "format", "force", "json")


def _scenario(args):
    """What the figure shows, for its caption and its file name: every flag that changes it
    (the roofline view runs no policy)."""
    from charts import export

    cost = cost_model_from(args)
    more = tuple((flag_name(dest).lstrip("-"), getattr(args, dest))
                 for dest in sorted(args.given) if dest not in NAMED_IN_EXPORTS)
    return export.Scenario(args.gpu, cost.gpu.name, args.model, cost.model.name, args.prompt,
                           args.decodes, args.budget, args.mode, args.tp, context=args.context,
                           policies=() if args.view == "roofline" else (args.unchunked, args.policy),
                           more=more)


def default_out(args) -> str:
    """Where the figure goes without --out: out/, named by `charts.export.file_name`."""
    from charts import export

    return os.path.join(OUT_DIR, export.file_name(_scenario(args), args.view, _look(args),
                                                  _format(args)))


def _figure(args, look, caps: tuple[int, ...]):
    """(the view's figure at a plot width, the clock's end: None for the roofline). The runs
    are made once; the figure is drawn at whatever plot width makes the picture --width wide."""
    from charts.figure import stacked
    from charts.views import budget_plan, roofline_figures, timeline

    if args.view == "roofline":
        decodes = check_number("--decodes", args.decodes, low=0, low_inclusive=True, high=1e6,
                               integer=True)
        context = check_number("--context", args.context, high=1e8, integer=True)
        prompt = check_number("--prompt", args.prompt, high=1e8, integer=True)
        budget = check_number("--budget", args.budget, high=KNOBS["budget"].high, integer=True)
        tpot_s = check_number("--tpot-ms", args.tpot_ms, low=1e-3, low_inclusive=True,
                              high=1e7) / 1e3   # a µs or more: no underflow to 0 s
        cost = cost_model_from(args)
        plan = budget_plan(cost, decodes, context, prompt, budget, tpot_s)
        return (lambda width: stacked(*roofline_figures(cost, plan, decodes, context, prompt, look,
                                                        width).shown)), None
    workload, chunked = run_from(args, caps[0])
    if not textbook(workload):
        raise InputError(f"--view {args.view} draws the textbook scenario (streams running + one new "
                         "prompt); drop --requests / --scenario poisson")
    _, unchunked = run_from(lane_args(args, args.unchunked), caps[1])
    lanes = timeline(unchunked, chunked, args.window)
    return (lambda width: lanes.figure(look, width, streams=args.view == "streams")), lanes.t_max


# Flags only one kind of view reads; given with another they are refused, not ignored. The
# roofline view reads the worked example's streams and prompt; a run view reads every other knob
# that shapes a workload and every limit of the knob table, so a knob added there is refused
# for the roofline without an edit here.
ROOFLINE_READS = ("decodes", "context", "prompt")
RUN_FLAGS = (*(k.name for k in KNOBS.values() if k.scenarios and k.name not in ROOFLINE_READS),
             *(k.name for k in LIMIT_KNOBS),
             "policy", "scenario", "allow_starvation", "trace_in", "max_iterations", "unchunked",
             "window")


def _refuse_unused(args, fmt: str) -> None:
    if args.view == "roofline":
        refuse(args, RUN_FLAGS, why="--view roofline prices the worked example's iterations from "
               "--decodes, --context, --prompt, --budget and --tpot-ms; it runs no workload")
    else:
        refuse(args, ("tpot_ms",), why=f"it sets the roofline view's target; --view {args.view} "
               "plays a run")
    if fmt != "gif":
        refuse(args, ("frames",), why=f"it counts a gif's frames; the format is {fmt}")


def _export(args) -> None:
    from charts import export, film

    fmt = _format(args)               # the output was checked before any work (cli/paths.py)
    _refuse_unused(args, fmt)
    width = check_number("--width", args.width, low=300, low_inclusive=True, high=4000,
                         integer=True)
    frames = check_number("--frames", args.frames, low=2, low_inclusive=True, high=600,
                          integer=True)
    caption = _scenario(args).caption
    caps = check_export_work(args, fmt, width, frames, caption)
    build, t_max = _figure(args, _look(args), caps)
    figure = export.fitted(build, width, caption)
    if fmt == "gif":
        data = film.gif(figure, t_max, frames)
    elif fmt == "svg":
        data = export.svg(figure).encode()
    else:
        data = export.png(figure)
    out = args.out or default_out(args)
    try:
        if args.out is None:
            os.makedirs(OUT_DIR, exist_ok=True)
        with open(out, "wb") as f:
            f.write(data)
    except OSError as e:
        raise InputError(f"cannot write {out!r}: {e.strerror}") from None
    emit(args, {"out": out, "view": args.view, "format": fmt, "bytes": len(data)},
         f"wrote {out!r} ({args.view}, {fmt}, {len(data):,} bytes)")


def register_export(sub) -> None:
    p = sub.add_parser("export", help="draw the side-by-side, streams or roofline view to a file",
                       description=paragraph("""
        Draw one of the app's figures to a file (--out), from the same flags as simulate:
        side-by-side (the unchunked --unchunked lane above the chunked --policy lane, iterations
        and token streams), streams (the token streams only) or roofline (the scenario's
        iterations on the GPU's roofline, over iteration time against budget, over the GEMM tile
        steps in the calibrated mode, the one with tiles). Formats: png (2
        pixels per CSS pixel), svg, or gif (the clock animated over --frames frames; side-by-side
        and streams). An export whose runs and frames x pixels are estimated over the command's
        budget (60 s, 1.5 GB) is refused before it starts."""))
    add_run_args(p)
    p.add_argument("--view", choices=VIEWS, default="side-by-side", help="the figure")
    p.add_argument("--format", help=f"one of: {', '.join(FORMATS)} (default: from --out, else png)")
    output_file(p, "--out", f"file to write (default: {OUT_DIR}/<view>_<gpu>_<model>_prompt-<prompt>_"
                            "streams-<decodes>_context-<context>_budget-<budget>_<unchunked>-vs-"
                            "<policy>_<mode>_<each other flag given>_<theme>.<format>)",
                default=default_out)
    p.add_argument("--unchunked", default="vllm-v0", help="the top lane's policy")
    p.add_argument("--window", choices=("prompt", "run"), default="prompt",
                   help="side-by-side, streams: the time axis around the new prompt, or the whole run")
    p.add_argument("--tpot-ms", type=float, default=25.0, help="roofline: the TPOT target")
    p.add_argument("--width", type=float, default=900,
                   help="the picture's width in CSS pixels, axes, legends and scenario lines "
                        "included (a png has 2 pixels for each)")
    p.add_argument("--frames", type=float, default=48, help="gif: number of frames")
    p.add_argument("--presenter", action="store_true", help="large fonts")
    p.add_argument("--dark", action="store_true", help="dark background")
    p.set_defaults(func=_export)
