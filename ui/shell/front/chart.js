// A chart in the page (ui/shell/chart_view.py): `data.spec` comes compiled to Vega, so Vega alone draws
// it (no Vega-Lite, no Vega-Embed); Vega is loaded once per page from `data.bundle`, the app's
// static copy of the player's bundle. Tooltips are the player's (tooltip.js, loaded before this).
// Streamlit runs this function when the chart's data change (a rerun that sends the same spec
// leaves the drawn view alone: tests/browser/test_charts_browser.py); a new spec replaces it.
const loading = {};

// Vega, once per page: the page may have started loading it already (ui/shell/server.py `run_early`).
function loadVega(url) {
  if (window.vega) return Promise.resolve(window.vega);
  const href = new URL(url, window.location.href).href;
  if (!loading[href]) {
    loading[href] = new Promise(function (resolve, reject) {
      let script = [...document.scripts].find(function (s) { return s.src === href; });
      if (!script) {
        script = document.createElement("script");
        script.src = href;
        document.head.appendChild(script);
      }
      script.addEventListener("load", function () { resolve(window.vega); });
      script.addEventListener("error", function () { reject(new Error("could not load Vega from " + url)); });
    });
  }
  return loading[href];
}

// A chart wider than its column scrolls in its box (chart.css): then the box takes the keyboard's
// focus, so that the arrow keys scroll it too.
function keyboardScroll(box) {
  if (box.scrollWidth > box.clientWidth + 1) box.setAttribute("tabindex", "0");
  else box.removeAttribute("tabindex");
}

export default function (component) {
  const { parentElement, data } = component;
  let box = parentElement.querySelector("." + data.box);
  if (!box) {
    box = document.createElement("div");
    box.className = data.box;
    parentElement.appendChild(box);
  }
  box.drawnSpec = data.spec;
  loadVega(data.bundle).then(function (vega) {
    if (box.drawnSpec !== data.spec) return;   // a newer spec arrived while Vega loaded
    if (box.view) box.view.finalize();
    box.replaceChildren();
    box.classList.remove("failed");
    const view = new vega.View(vega.parse(JSON.parse(data.spec)),
                               {renderer: "canvas", logLevel: vega.Warn, hover: true});
    view.tooltip(window.playerTooltip(data.theme));
    box.view = view;
    return view.initialize(box).runAsync().then(function () {
      if (!box.resizes) {
        box.resizes = new ResizeObserver(function () { keyboardScroll(box); });
        box.resizes.observe(box);
      }
    });
  }).catch(function (error) {
    box.textContent = "This chart could not be drawn: " + error.message;
    box.classList.add("failed");
  });
}
