"""How close is this to a real GPU? The cost model against published kernel timings, the error
table, what makes real kernels slower than the roofline, and why one iteration's time moved."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from charts.fidelity import factors_frame, points_table, summary_table
from sim.cost.calibration import A100, FACTOR_SOURCES, calibration_for, factor_rules
from sim.cost.iteration import MODE_NAMES
from sim.cost.validation import DATA_SOURCE, GPU_ID, PUBLISHED_COLUMNS, published_row
from sim.errors import InputError
from sim.presets.hardware import GPUS
from ui.learn import reproduce, runs
from ui.shell import controls, presenter, widgets
from ui.shell.glossary import first, term

look = widgets.look()
report = runs.fidelity_report()
summary = report["summary"]
held, ideal = summary["calibrated"]["held_out"], summary["roofline"]["held_out"]
target = report["target"]
measured_gpu = GPUS[GPU_ID]

st.header("How close is this to a real GPU?")
st.markdown(
    f"The {term('roofline')} says what no kernel can beat: max({first('flop')} / peak, bytes / "
    "bandwidth). Real kernels "
    "are slower, so the **roofline** mode is a lower bound. The **calibrated** mode prices the "
    "same FLOPs and bytes the way kernels really run, one named inefficiency at a time. This page "
    "checks both against measured kernel times and shows every gap.", unsafe_allow_html=True)
st.info(
    "**No GPU was measured in this project.** The measured points are published profiles: "
    f"{DATA_SOURCE}. They time the four weight {first('gemm', hover=False)} kernels of one "
    "Llama-2-7B layer (QKV, O, gate+up, down) at 1 to 4,096 tokens and "
    f"{first('tp', hover=False)} degrees 1, 2, 4 and 8. The "
    "calibration was "
    f"fitted on {report['data']['fitted_on']} ({summary['calibrated']['fitted']['points']:,} "
    f"points); the other {held['points']:,} points are predictions it never saw.",
    icon=":material/science:")

error_rule = "|predicted / measured − 1|"
st.markdown(f"Error {error_rule} on the {held['points']:,} held-out points:")
cols = st.columns(4)
for col, (label, mode, stat) in zip(cols, (
        ("Calibrated, median", "calibrated", "median_abs_error"),
        ("Calibrated, max", "calibrated", "max_abs_error"),
        ("Roofline (ideal), median", "roofline", "median_abs_error"),
        ("Roofline (ideal), max", "roofline", "max_abs_error"))):
    s = summary[mode]["held_out"]
    col.metric(label, f"{s[stat]:.1%}", border=True,
               help=f"{'median' if stat.startswith('median') else 'max'} over the {s['points']:,} "
                    f"held-out points of {error_rule}, predicted by the {mode} mode. Target for "
                    f"the calibrated mode: median ≤ {target['median_abs_error']:.0%}, max ≤ "
                    f"{target['max_abs_error']:.0%}.")
st.markdown(
    f"Target on the held-out points (median ≤ {target['median_abs_error']:.0%}, max ≤ "
    f"{target['max_abs_error']:.0%}): **{'met' if target['met'] else 'not met'}**. The roofline "
    f"is below every measured point: **{'yes' if report['roofline_is_lower_bound'] else 'no'}**, "
    f"by {ideal['median_abs_error']:.0%} in the median.")

figures = runs.fidelity_figures(look)
times_spec, accuracy_spec = runs.fidelity_specs(look)
with presenter.figure():
    widgets.chart(times_spec, lambda: figures[0], "fidelity-times")
st.caption(
    "Lines: each mode's prediction at every tile edge (every token count up to 256). Dots: the "
    "measurements, round where the fit saw them, square where it did not. Per layer and per GPU: "
    "with TP = N each GPU computes 1/N of every GEMM's columns. The calibrated line steps where "
    f"a new {A100.gemm_tile}-row tile starts; the roofline is flat while the weights' bytes bound "
    "it, then rises with the FLOPs.")
widgets.chart(accuracy_spec, lambda: figures[1], "fidelity-accuracy")
ideal_errors = sorted(report["points"], key=lambda p: p["roofline_error"])
worst = ideal_errors[0]
st.caption(
    "Error = predicted / measured − 1: below zero the model is faster than the GPU was. The "
    f"roofline is {-ideal_errors[-1]['roofline_error']:.0%} to {-worst['roofline_error']:.0%} fast, "
    f"worst at {worst['tokens']:,} tokens (TP = {worst['tp']}), near its ridge, where a real GEMM "
    "runs neither its memory nor its compute at full speed.")

st.subheader("The error table")
st.markdown(f"The numbers `python -m sim validate` prints: every measured point, each mode's "
            f"prediction and its error, and the median and max {error_rule} by set of points.")
percent = "{:.1%}".format          # as `python -m sim validate` prints them
widgets.table(summary_table(report).assign(mode=lambda t: t["mode"].map(MODE_NAMES),
                                           set=lambda t: t["set"].map(reproduce.point_set_name))
              .set_index("mode").rename_axis("cost mode").rename(columns={"set": "points of"})
              .assign(**{name: lambda t, name=name: t[name].map(percent)
                         for name in ("median |error|", "max |error|")}))
st.caption("Held out: every point the fit did not see; fitted: the training points; all: both; "
           "held out, TP = N: the held-out points at that tensor-parallel degree.")
# A thousand rows, on request (a first visit draws no grid): formatted in the browser (a Styler
# formats every cell in the page's run and sends each as text beside its number), the errors as
# percentages.
ERRORS = ("roofline error", "calibrated error")
if st.toggle(f"Show every measured point ({len(report['points']):,} rows, sortable)",
             key="fidelity_points"):
    st.dataframe(points_table(report).assign(**{name: lambda t, name=name: t[name] * 100
                                                for name in ERRORS}),
                 column_config={**{name: st.column_config.NumberColumn(format="%.4f") for name in
                                   ("measured (ms)", "roofline (ms)", "calibrated (ms)")},
                                **{name: st.column_config.NumberColumn(format="%+.1f%%")
                                   for name in ERRORS}},
                 hide_index=True, height=320)
st.markdown("**Published whole-iteration figures**, a check on another model (OPT-13B), on "
            f"attention and the {first('lm')} head, and on the tile step; none of them was fitted:",
            unsafe_allow_html=True)
widgets.table(pd.DataFrame([published_row(c) for c in report["published"]],
                           columns=PUBLISHED_COLUMNS).set_index(PUBLISHED_COLUMNS[0])
              .rename(columns=MODE_NAMES))

st.subheader("Why real kernels miss the roofline")
st.markdown("The calibrated mode adds these, in this order; each is a plain formula on the same "
            "FLOPs and bytes the roofline counts. Figures for the A100 (the fit):")
st.markdown("\n".join(f"- **{name}.** {rule[0].upper()}{rule[1:]}. "
                      f"*Source: {FACTOR_SOURCES[name]}.*"
                      for name, rule in factor_rules(A100).items()))

st.subheader("Predicted, not validated")
st.markdown(
    f"Only the {measured_gpu.name}'s weight GEMMs (Llama-2-7B shapes) are checked point by point. "
    "Every other GPU gets the same fractions of its own datasheet peak and bandwidth, not a fit of "
    "its own, so its calibrated numbers are predictions no measurement here has checked:\n"
    + "\n".join(f"- **{GPUS[gpu].name}**: " + (
        f"the same chip as the {measured_gpu.name}, so the same fit, on its own "
        f"{GPUS[gpu].bandwidth / 1e12:,.4g} TB/s" if cal is A100 else cal.provenance)
        for gpu, cal in ((gpu, calibration_for(GPUS[gpu])) for gpu in GPUS
                         if gpu not in ("illustrative", GPU_ID)))
    + "\n- **A custom GPU**: the A100 fractions on the fields you enter.\n\n"
    "Attention kernels, the LM head, the all-reduce and the per-iteration overhead come from "
    "published figures and are checked only through the whole-iteration figures above (one model "
    "and one GPU). The illustrative GPU has no calibration: its figures are already round "
    "sustained numbers.")

st.subheader("The papers, reproduced")
reproduced = reproduce.shipped()
st.markdown(
    "The Sarathi-Serve paper's own figures, each beside what this lab gives for the same setup: its "
    f"capacity search (the highest rate in {first('qps')} whose p99 {first('tbt')} meets the "
    f"{first('slo')} with a median scheduling delay ≤ 2 s), the calibrated cost model, and for "
    f"the paper's ablation the p50 {first('ttft')}; on the paper's GPUs (A100 80GB PCIe), models "
    "and ShareGPT request lengths. Beside them, one figure of the DistServe paper: its opening "
    "example's goodput per GPU (the highest rate at which 90% of requests meet both latency "
    "targets), prompts and decodes on separate GPUs against both on one (OPT-13B on A100 80GB). "
    "*simulated / paper* = 1 is agreement; each row's note gives its main uncertainty.",
    unsafe_allow_html=True)
widgets.table(reproduce.table(reproduced).set_index(reproduce.COLUMNS[0]))
st.markdown("**Notes**, the main uncertainty of each row:\n\n" + reproduce.notes(reproduced))
st.caption(
    f"Made by `{reproduced.command}` at commit {reproduced.commit} ({reproduced.effort} for the "
    "capacity searches, which take minutes); `python -m sim reproduce` prints the same table, and "
    "`--rerun NAME` recomputes one scenario. Paper figures from: "
    + "; ".join(reproduce.sources(reproduced)) + ".")

st.subheader("Why did this point move?")
s = widgets.scenario()
explained = s.in_mode("calibrated")
try:
    explained.cost_model()
except InputError as e:
    explained = replace(explained, gpu=measured_gpu)
    st.caption(f"Shown on the {measured_gpu.name}, the GPU the measurements come from: the "
               f"sidebar's {s.gpu.name} has no calibration to explain ({e}). Pick a real GPU "
               "in the sidebar to see it there.")
priced = runs.priced_iterations(explained)
key = widgets.widget(controls.WHY, width=340)
if key not in priced:
    st.warning(f"Budget {s.budget:,} ≤ {s.decodes:,} decodes: there is no chunk, so no "
               f"{key} iteration. Showing the whole prompt instead.")
    key = "prompt"
cost = priced[key].cost
factors = factors_frame(cost)
start_ms = factors.end_ms.iloc[0]
st.markdown(
    f"The **{priced[key].label}** of the sidebar's scenario, {explained.model.name} on "
    f"{explained.gpu.name}" + (f" × {explained.tp}" if explained.tp > 1 else "") + ": the ideal "
    f"roofline time **{start_ms:,.4g} ms** (the roofline mode's), and the calibrated time "
    f"**{cost.time_s * 1e3:,.4g} ms** = {cost.time_s * 1e3 / start_ms:,.3g} × it. Each bar adds "
    "one factor to the one before; they sum to the calibrated time.")
runs.factors_figure.draw("why-it-moved", explained, key, look)
widgets.table(factors.assign(
    **{"adds (ms)": factors.added_ms.map(lambda x: f"{x:,.4g}"),
       "running total (ms)": factors.end_ms.map(lambda x: f"{x:,.4g}")})
    [["step", "adds (ms)", "running total (ms)", "why"]].set_index("step"))
