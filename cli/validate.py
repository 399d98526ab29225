"""`python -m sim validate`: predicted vs measured for every data point the project ships.

JSON keys (`--json`): data, calibration, target, roofline_is_lower_bound, summary (per mode:
held_out, fitted, all, held_out_tpN, each with points / median_abs_error / max_abs_error), points
(tp, tokens, held_out, measured_s, roofline_s, roofline_error, calibrated_s, calibrated_error),
published (source, what, measured, unit, roofline, roofline_error, calibrated, calibrated_error),
and with --refit: refit (the fitted parameters and each tile's training loss).
"""

from __future__ import annotations

from sim.cost.calibration import A100
from sim.cost.validation import (
    PUBLISHED_COLUMNS,
    TARGET_MAX,
    TARGET_MEDIAN,
    fit_gemms,
    fmt_error,
    published_row,
    validate,
)
from sim.units import fmt_seconds

from .flags import paragraph
from .output import emit, table

FITTED = ("gemm_efficiency", "memory_efficiency", "ridge_softness", "kernel_floor_s", "gemm_tile")


def _validate(args) -> None:
    report = validate()
    lines = []
    if not args.summary:
        lines.append(table(
            [(p["tp"], f"{p['tokens']:,}", "held out" if p["held_out"] else "fitted",
              fmt_seconds(p["measured_s"]), fmt_seconds(p["roofline_s"]),
              fmt_error(p["roofline_error"]), fmt_seconds(p["calibrated_s"]),
              fmt_error(p["calibrated_error"]))
             for p in report["points"]],
            ("TP", "tokens", "point", "measured", "roofline", "error", "calibrated", "error"),
            args.wide))
        lines.append("")
    lines.append(f"{report['data']['measures']}; {report['data']['source']}; fitted on "
                 f"{report['data']['fitted_on']}")
    lines.append(table([(mode, group, f"{s['points']:,}", f"{s['median_abs_error']:.1%}",
                         f"{s['max_abs_error']:.1%}")
                        for mode, groups in report["summary"].items()
                        for group, s in groups.items()],
                       ("mode", "set", "points", "median |error|", "max |error|"), args.wide))
    target = report["target"]
    lines.append(f"target on held-out points: calibrated median <= {TARGET_MEDIAN:.0%} and max <= "
                 f"{TARGET_MAX:.0%}: {'met' if target['met'] else 'NOT met'}; roofline below every "
                 f"measured point: {'yes' if report['roofline_is_lower_bound'] else 'NO'}")
    lines.append("\npublished figures (whole iterations, held out):")
    lines.append(table([published_row(c) for c in report["published"]], PUBLISHED_COLUMNS,
                       args.wide))
    if args.refit:
        fitted, losses = fit_gemms()
        report["refit"] = {"parameters": {k: getattr(fitted, k) for k in FITTED},
                           "training_loss_by_tile": losses}
        lines.append("\nrefit on the training points (mean |log error| per GEMM by tile: "
                     + ", ".join(f"{t}: {v:.4f}" for t, v in losses.items()) + ")")
        lines.append(table([(k, f"{getattr(fitted, k):.4g}", f"{getattr(A100, k):.4g}")
                            for k in FITTED], ("parameter", "refit", "in sim/cost/calibration.py"),
                           args.wide))
    emit(args, report, "\n".join(lines))


def register_validate(sub) -> None:
    p = sub.add_parser("validate", help="the cost model against measured GPU timings",
                       description=paragraph("""
        The cost model against every measured timing the project ships: for each A100 GEMM data
        point (from microsoft/vidur) the measured time, the roofline's and the calibrated mode's
        predictions (seconds) and their errors, marked fitted or held out; the median and largest
        absolute error per mode on the points the calibration did not see, and whether the target
        is met; then published whole-iteration figures against both modes. Takes no inputs."""))
    p.add_argument("--summary", action="store_true",
                   help="leave out the per-point table (default off)")
    p.add_argument("--refit", action="store_true",
                   help="refit the calibration on the training points and compare its parameters "
                        "with the shipped ones (default off)")
    p.set_defaults(func=_validate)
