(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("player-config").textContent);
  var spec = JSON.parse(document.getElementById("player-spec").textContent);
  var state = window.playerState = {t: 0, playing: false};
  // For benchmarks: animation frames while playing, view runs finished, and ms spent in them.
  var stats = window.playerStats = {frames: 0, updates: 0, updateMs: 0};
  var $ = function (id) { return document.getElementById(id); };
  var playBtn = $("play"), backBtn = $("back"), fwdBtn = $("forward"), scrub = $("scrub"),
      clockOut = $("clock"), speedSel = $("speed"), cue = $("cue");
  var rate = cfg.msPerSecond, view = null, busy = false, dirty = false, last = null, saved = 0;
  // Where playback pauses by itself: a tour's `playTo` the first time, the end after that.
  var stopAt = cfg.tMax;
  var eps = 1e-9 * Math.max(1, cfg.tMax);
  // Where playback was, per view, for this browser tab: a rerun of the page (any sidebar change)
  // rebuilds this frame, and the position, the speed and whether it was playing carry over.
  var storeKey = cfg.key ? "chunked-prefill-player:" + cfg.key : null;

  function remembered() {
    try { return storeKey && JSON.parse(window.sessionStorage.getItem(storeKey)); }
    catch (e) { return null; }   // storage blocked (a sandboxed frame): start afresh
  }

  function remember(force) {
    var now = performance.now();
    if (!storeKey || (!force && now - saved < 200)) return;
    saved = now;
    try {
      window.sessionStorage.setItem(storeKey, JSON.stringify(
        {t: state.t, rate: rate, playing: state.playing}));
    } catch (e) { /* storage blocked: nothing to keep */ }
  }

  function fmtMs(seconds) {
    return (seconds * 1000).toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1});
  }

  function showState() {
    scrub.value = String(state.t);
    scrub.setAttribute("aria-valuetext", fmtMs(state.t) + " ms");
    clockOut.textContent = fmtMs(state.t);
    playBtn.setAttribute("aria-label", state.playing ? "Pause" : "Play");
    playBtn.classList.toggle("playing", state.playing);
    playBtn.querySelector(".label").textContent = state.playing ? "Pause" : "Play";
    cue.classList.toggle("hidden", state.playing || state.t > 0);
  }

  // Push the clock into the view; while a run is in flight only the latest value is kept.
  function pushClock() {
    if (!view) return;
    if (busy) { dirty = true; return; }
    busy = true;
    var started = performance.now();
    view.signal(cfg.clock, state.t);
    view.runAsync().then(function () {
      stats.updates += 1;
      stats.updateMs += performance.now() - started;
      busy = false;
      if (dirty) { dirty = false; pushClock(); }
    }, showError);
  }

  // Test hooks: the clock value the chart itself holds, and the data of the items a mark named
  // `name` (a Vega-Lite unit's name) has drawn.
  window.playerSignal = function () { return view ? view.signal(cfg.clock) : null; };
  window.playerMarks = function (name) {
    var found = [], named = new RegExp("^" + name + "(_\\d+)?_marks$");   // Vega-Lite may add _N
    (function walk(mark) {
      if (named.test(mark.name)) mark.items.forEach(function (i) { found.push(i.datum); });
      mark.items.forEach(function (item) { (item.items || []).forEach(walk); });
    })(view.scenegraph().root);
    return found;
  };

  function setTime(t) {
    state.t = Math.min(Math.max(t, 0), cfg.tMax);
    showState();
    pushClock();
    remember(!state.playing);
  }

  function frame(now) {
    if (!state.playing) return;
    stats.frames += 1;
    if (last !== null) {
      // A hidden tab gets no frames: cap the step so the clock does not leap on return.
      var wall = Math.min(now - last, 100) / 1000;
      var t = state.t + wall * rate / 1000;
      if (t >= stopAt) { t = stopAt; state.playing = false; stopAt = cfg.tMax; }
      setTime(t);
    }
    last = now;
    if (state.playing) requestAnimationFrame(frame);
  }

  function play() {
    if (state.t >= cfg.tMax - eps) state.t = 0;
    state.playing = true;
    last = null;
    setTime(state.t);
    requestAnimationFrame(frame);
  }

  function pause() { state.playing = false; showState(); remember(true); }
  function toggle() { if (cfg.locked) return; if (state.playing) pause(); else play(); }

  function step(direction) {
    if (cfg.locked) return;
    pause();
    var b = cfg.boundaries, target = direction > 0 ? cfg.tMax : 0;
    if (direction > 0) {
      for (var i = 0; i < b.length; i++) if (b[i] > state.t + eps) { target = b[i]; break; }
    } else {
      for (var j = b.length - 1; j >= 0; j--) if (b[j] < state.t - eps) { target = b[j]; break; }
    }
    setTime(target);
  }

  function setRate(value) {
    rate = value;
    var match = Array.prototype.some.call(speedSel.options, function (o) { return Number(o.value) === value; });
    if (!match) speedSel.add(new Option(value + " ms/s", String(value)));
    speedSel.value = String(value);
  }

  function showError(err) {
    var box = $("chart");
    window.playerError = String(err && err.message || err);
    box.setAttribute("role", "alert");
    box.textContent = "The chart could not be drawn: " + window.playerError;
  }

  // A clock that may not move yet (a tour's guess comes first): its controls say so, disabled.
  if (cfg.locked) {
    [playBtn, backBtn, fwdBtn, scrub].forEach(function (control) {
      control.disabled = true;
      control.title = cfg.locked;
    });
  }
  playBtn.addEventListener("click", toggle);
  backBtn.addEventListener("click", function () { step(-1); });
  fwdBtn.addEventListener("click", function () { step(1); });
  scrub.addEventListener("input", function () { setTime(Number(scrub.value)); });
  speedSel.addEventListener("change", function () { rate = Number(speedSel.value); remember(true); });
  // While playing, the position is saved at most every 200 ms; leaving saves it exactly.
  window.addEventListener("pagehide", function () { remember(true); });

  var host = window.frameElement, hostDoc = host && host.ownerDocument;

  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var el = e.target, tag = el && el.tagName;
    // Text fields and the speed list keep their own keys; a focused button clicks on space.
    if (tag === "SELECT" || (tag === "INPUT" && el.type !== "range")) return;
    if (cfg.keys === "page") {   // a tour's keys: passed on to the page, which moves the tour
      if (!hostDoc || (e.key === " " && tag === "BUTTON")) return;
      e.preventDefault();
      hostDoc.body.dispatchEvent(new KeyboardEvent("keydown", {key: e.key, bubbles: true}));
      return;
    }
    if (e.key === " " || e.key === "Spacebar") {
      if (tag === "BUTTON") return;
      e.preventDefault();
      toggle();
    } else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      step(e.key === "ArrowRight" ? 1 : -1);
    }
  }
  document.addEventListener("keydown", onKey);

  // In a page of the app (an iframe of the same origin) the keys also work before any click
  // into the frame: pressed on the page itself -- not in one of its controls or links -- while
  // the player is in view. The listener leaves with the frame.
  var CONTROLS = "input, textarea, select, button, a[href], [contenteditable=''], " +
      "[contenteditable='true'], [role=slider], [role=combobox], [role=listbox], [role=switch], " +
      "[role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=button]";
  function onHostKey(e) {
    if (e.target && e.target.closest && e.target.closest(CONTROLS)) return;
    var box = host.getBoundingClientRect(), room = hostDoc.defaultView.innerHeight;
    if (box.bottom <= 0 || box.top >= room) return;
    onKey(e);
  }
  if (hostDoc && cfg.keys === "player") {
    hostDoc.addEventListener("keydown", onHostKey);
    window.addEventListener("pagehide", function () {
      hostDoc.removeEventListener("keydown", onHostKey);
    });
  }

  // "Save this frame": the chart as drawn at the clock (on the spec's background), 2x for docs.
  $("save-frame").addEventListener("click", function () {
    if (!view) return;
    view.toImageURL("png", 2).then(function (url) {
      var link = document.createElement("a");
      link.href = url;
      link.download = cfg.fileStem + "_t-" + (state.t * 1000).toFixed(1) + "ms.png";
      document.body.appendChild(link);
      link.click();
      link.remove();
    }, showError);
  });

  var resume = remembered();
  if (resume && isFinite(resume.t) && isFinite(resume.rate) && resume.rate > 0) {
    setRate(resume.rate);
    state.t = Math.min(Math.max(resume.t, 0), cfg.tMax);
  } else {
    state.t = cfg.start;
    if (cfg.playTo !== null) { stopAt = cfg.playTo; resume = {playing: true}; }
  }
  showState();
  // The spec comes compiled to Vega (charts/player/__init__.py), so the view is built directly,
  // with our own tooltips (tooltip.js).
  new Promise(function (resolve) {
    var drawn = new vega.View(vega.parse(spec), {renderer: cfg.renderer, logLevel: vega.Warn});
    drawn.tooltip(window.playerTooltip(cfg.dark ? "dark" : "light"));
    resolve(drawn.initialize($("chart")).runAsync());
  }).then(function (drawn) {
    view = drawn;
    pushClock();
    fitChart();
    window.addEventListener("resize", fitChart);
    view.runAsync().then(outline);
    window.playerView = view;   // for tests: the drawn scene (view.scenegraph())
    window.playerReady = true;
    if (resume && resume.playing && state.t < cfg.tMax - eps) play();
  }).catch(showError);

  // Vega finds the mark under the pointer from where the canvas lies on screen, which fitChart's
  // zoom scales, while the scene it searches is drawn unscaled: the pointer is taken back to the
  // scene's scale here, or a chart scaled to fit would pick, and show the tooltip of, whatever
  // lies at the wrong place.
  var pickEvent = vega.CanvasHandler.prototype.pickEvent;
  vega.CanvasHandler.prototype.pickEvent = function (event) {
    var canvas = this._canvas, box = canvas.getBoundingClientRect();
    var scale = canvas.offsetWidth ? box.width / canvas.offsetWidth : 1;
    if (Math.abs(scale - 1) < 1e-6) return pickEvent.call(this, event);
    var x = (event.clientX - box.left) / scale - (canvas.clientLeft || 0);
    var y = (event.clientY - box.top) / scale - (canvas.clientTop || 0);
    return this.pick(this._scene, x, y, x - this._origin[0], y - this._origin[1]);
  };

  // A chart larger than the frame (a narrow window; lanes taller than a projector's screen
  // leaves) is scaled down to fit, rather than cut off at the edge.
  function fitChart() {
    var chart = $("chart"), drawn = chart.firstElementChild;
    if (!drawn) return;
    drawn.style.zoom = 1;
    var style = getComputedStyle(chart);
    var roomHeight = chart.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    drawn.style.zoom = Math.min(1, (chart.clientWidth - 16) / drawn.scrollWidth,
                                roomHeight / drawn.scrollHeight);
    outline();
  }

  // Where a named view of the chart (its group, with what it draws outside its plot: axis,
  // titles) lies in the chart's box, in CSS pixels as shown (the chart may be scaled to fit).
  function viewBoxes() {
    var drawn = $("chart").firstElementChild, found = {};
    if (!view || !drawn) return found;
    var zoom = Number(drawn.style.zoom) || 1, origin = view.origin();
    var left = drawn.offsetLeft * zoom, top = drawn.offsetTop * zoom;
    (function walk(item, dx, dy) {
      (item.items || []).forEach(function (mark) {
        (mark.items || []).forEach(function (group) {
          if (mark.marktype !== "group") return;
          var b = group.bounds;
          found[(mark.name || "").replace(/_group$/, "")] = {
            left: left + (dx + b.x1) * zoom, top: top + (dy + b.y1) * zoom,
            width: (b.x2 - b.x1) * zoom, height: (b.y2 - b.y1) * zoom};
          walk(group, dx + (group.x || 0), dy + (group.y || 0));
        });
      });
    })(view.scenegraph().root.items[0], origin[0], origin[1]);
    return found;
  }
  window.playerViewBox = function (name) { return viewBoxes()[name] || null; };   // for tests

  // A tour's highlight: a frame around each named view, over the chart and scaled with it
  // (player.css draws it just outside the view's box).
  function outline() {
    var chart = $("chart"), boxes = viewBoxes();
    chart.querySelectorAll(".highlight").forEach(function (box) { box.remove(); });
    cfg.highlight.forEach(function (name) {
      var b = boxes[name];
      if (!b) return;
      var box = document.createElement("div");
      box.className = "highlight";
      box.dataset.view = name;
      box.setAttribute("data-testid", "player-highlight");
      box.style.left = b.left + "px";
      box.style.top = b.top + "px";
      box.style.width = b.width + "px";
      box.style.height = b.height + "px";
      chart.appendChild(box);
    });
  }
})();
