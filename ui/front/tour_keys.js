// The guided tour's keys (ui/tour_view.py), on the whole page: space, → or Page Down for the next
// step, ← or Page Up for the one before, a digit for that step (`data.steps` of them: the numbers
// of the step picker and of `?tour=N`). A key pressed in a field, a list or a choice stays there;
// on a button or a link only space does (it presses it). The player's frame passes its keys on to
// the page (keys="page").
// A guess is made once (a click, or ↑ / ↓ / space on its choices): then the keyboard focus leaves
// the choice, so that → moves on instead of changing the guess, and ← → on a guess's choices
// always move through the tour.
export default function (component) {
  const { setTriggerValue, data } = component;
  const FIELDS = "input, textarea, select, [contenteditable=''], [contenteditable='true'], " +
      "[role=slider], [role=spinbutton], [role=combobox], [role=listbox], [role=radio], " +
      "[role=radiogroup], [role=tab], [role=menuitem]";
  const PRESSABLE = "button, a[href], [role=button], [role=switch], [role=checkbox]";
  const GUESS = "[class*='st-key-guess-']";
  const TOUR_KEYS = ["ArrowRight", "ArrowLeft", "PageDown", "PageUp"];
  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.defaultPrevented) return;
    const target = e.target && e.target.closest ? e.target : null;
    const inGuess = target && target.closest(GUESS) && TOUR_KEYS.includes(e.key);
    if (target && target.closest(FIELDS) && !inGuess) return;
    if (e.key === " " && target && target.closest(PRESSABLE)) return;
    let action = null;
    if (e.key === " " || e.key === "ArrowRight" || e.key === "PageDown") action = "next";
    else if (e.key === "ArrowLeft" || e.key === "PageUp") action = "back";
    else if (/^[1-9]$/.test(e.key) && Number(e.key) <= data.steps) action = "step-" + e.key;
    if (!action) return;
    e.preventDefault();
    if (inGuess) target.blur();
    setTriggerValue("key", action);
  }
  function onGuess(e) {
    const choice = e.target;
    if (!choice || !choice.closest || !choice.closest(GUESS)) return;
    choice.blur();   // the page's keys again: → moves on
  }
  document.addEventListener("keydown", onKey);
  document.addEventListener("change", onGuess, true);
  return function () {
    document.removeEventListener("keydown", onKey);
    document.removeEventListener("change", onGuess, true);
  };
}
