// The room a presenter's page has (ui/presenter.py): the window's size, and the top and width of
// the element that holds the fitted figure (`data.stage`, a CSS selector), reported to the app
// when they change by more than a few pixels. A figure fitted to it changes nothing above it, so
// one report settles it (a rerun that moved it would be reported once more).
export default function (component) {
  const { setStateValue, data } = component;
  let known = data && data.known;
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
    if (moved(known, now)) { known = now; setStateValue("room", now); }
  }
  // The stage is drawn after this element in the same run, and moves as the page settles.
  const timer = setInterval(check, 400);
  window.addEventListener("resize", check);
  check();
  return function () { clearInterval(timer); window.removeEventListener("resize", check); };
}
