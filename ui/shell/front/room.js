// The room a presenter's page has (ui/shell/presenter.py): the window's size, and the top and width of
// the element that holds the fitted figure (`data.stage`, a CSS selector), reported to the app
// when they change by more than a few pixels. A figure fitted to it changes nothing above it, so
// one report settles it (a rerun that moved it would be reported once more). `data.keeps`: the
// room under the stage's top [least, most] within which the run's figure stays as drawn at the
// width it was fitted to; a room like that is not reported (the run guessed well enough: a
// fresh visit runs once).
export default function (component) {
  const { setStateValue, data } = component;
  let known = data && data.known;
  const fitted = known;   // the room the run's figure was fitted to
  function keeps(now) {
    const range = data && data.keeps;
    return Array.isArray(range) && fitted && fitted.stage_width !== null
      && Math.abs(now.stage_width - fitted.stage_width) <= 4
      && now.height - now.top >= range[0] && now.height - now.top <= range[1];
  }
  // The stage's top on the page as laid out, not as scrolled: Streamlit scrolls its main area
  // (not the window), so the top is taken from the main block's own top.
  function measure() {
    const stage = data && data.stage ? document.querySelector(data.stage) : null;
    const block = document.querySelector('[data-testid="stMainBlockContainer"]');
    const box = stage && block ? stage.getBoundingClientRect() : null;
    return {width: window.innerWidth, height: window.innerHeight,
            top: box ? Math.round(box.top - block.getBoundingClientRect().top + block.offsetTop) : null,
            stage_width: box ? Math.round(box.width) : null};
  }
  function moved(a, b) {
    if (!a || !b) return true;
    return Object.keys(b).some(function (k) {
      return (a[k] === null) !== (b[k] === null) || Math.abs((a[k] || 0) - (b[k] || 0)) > 4;
    });
  }
  function check() {
    const now = measure();
    if (data && data.stage && now.top === null) return;   // not drawn yet (or not on this page)
    if (!moved(known, now)) return;
    known = now;
    if (!keeps(now)) setStateValue("room", now);
  }
  // The stage may be drawn after this element in the same run, and moves as the page settles.
  const timer = setInterval(check, 400);
  window.addEventListener("resize", check);
  check();
  return function () { clearInterval(timer); window.removeEventListener("resize", check); };
}
