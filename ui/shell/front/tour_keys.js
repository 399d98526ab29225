// The guided tour's keys (ui/teach/tour_view.py), on the whole page: space, → or Page Down for the next
// step, ← or Page Up for the one before, a digit for that step (`data.steps` of them: the numbers
// of the step picker and of `?tour=N`). A key pressed in a field, a list or a choice stays there;
// on a button or a link only space does (it presses it). The player's frame passes its keys on to
// the page (keys="page").
// A click on a guess's choice gives the keyboard focus back to the page, so that → moves on
// instead of changing the guess; ← → on a choice reached with Tab move through the tour too
// (↑ ↓ and space choose).
export default function (component) {
  const { setTriggerValue, data } = component;
  const FIELDS = "input, textarea, select, [contenteditable=''], [contenteditable='true'], " +
      "[role=slider], [role=spinbutton], [role=combobox], [role=listbox], [role=radio], " +
      "[role=radiogroup], [role=tab], [role=menuitem]";
  const PRESSABLE = "button, a[href], [role=button], [role=switch], [role=checkbox]";
  const GUESS = "[class*='st-key-guess-']";
  const TOUR_KEYS = ["ArrowRight", "ArrowLeft", "PageDown", "PageUp"];
  function action(e) {
    if (e.key === " " || e.key === "ArrowRight" || e.key === "PageDown") return "next";
    if (e.key === "ArrowLeft" || e.key === "PageUp") return "back";
    if (/^[1-9]$/.test(e.key) && Number(e.key) <= data.steps) return "step-" + e.key;
    return null;
  }
  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.defaultPrevented) return;
    const target = e.target && e.target.closest ? e.target : null;
    if (target && target.closest(FIELDS)) return;
    if (e.key === " " && target && target.closest(PRESSABLE)) return;
    const act = action(e);
    if (!act) return;
    e.preventDefault();
    setTriggerValue("key", act);
  }
  // Before the choices' own handler (which would move the choice): ← → on a guess's choices.
  function onGuessKey(e) {
    const target = e.target && e.target.closest ? e.target : null;
    if (e.altKey || e.ctrlKey || e.metaKey || !target || !target.closest(GUESS)) return;
    if (!TOUR_KEYS.includes(e.key)) return;
    e.preventDefault();
    e.stopPropagation();
    target.blur();
    setTriggerValue("key", action(e));
  }
  // A click on a choice makes the guess, and the choice takes the focus (after the click):
  // give it back to the page. A choice reached with Tab keeps it (↑ ↓ and space choose).
  let pressed = false;
  function inGuess(e) { return e.target && e.target.closest && e.target.closest(GUESS); }
  function releaseFocus() {
    setTimeout(function () {
      const focused = document.activeElement;
      if (focused && focused.closest && focused.closest(GUESS)) focused.blur();
    }, 0);
  }
  function onPointerDown(e) { pressed = Boolean(inGuess(e)); }
  function onFocus(e) { if (pressed && inGuess(e)) releaseFocus(); }
  function onClick(e) { if (inGuess(e)) releaseFocus(); pressed = false; }
  const listeners = [["keydown", onKey, false], ["keydown", onGuessKey, true],
                     ["pointerdown", onPointerDown, true], ["focusin", onFocus, true],
                     ["click", onClick, true]];
  for (const [type, listener, capture] of listeners) document.addEventListener(type, listener, capture);
  return function () {
    for (const [type, listener, capture] of listeners) {
      document.removeEventListener(type, listener, capture);
    }
  };
}
