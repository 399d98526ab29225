// The guided tour's keys (ui/tour_view.py), on the whole page: space, → or Page Down for the next
// step, ← or Page Up for the one before, a digit for a chapter's first step (`data.chapters` of
// them). A key pressed in a field, a list or a choice stays there; on a button or a link only
// space does (it presses it). The player's frame passes its keys on to the page (keys="page").
export default function (component) {
  const { setTriggerValue, data } = component;
  const FIELDS = "input, textarea, select, [contenteditable=''], [contenteditable='true'], " +
      "[role=slider], [role=spinbutton], [role=combobox], [role=listbox], [role=radio], " +
      "[role=radiogroup], [role=tab], [role=menuitem]";
  const PRESSABLE = "button, a[href], [role=button], [role=switch], [role=checkbox]";
  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.defaultPrevented) return;
    const target = e.target && e.target.closest ? e.target : null;
    if (target && target.closest(FIELDS)) return;
    if (e.key === " " && target && target.closest(PRESSABLE)) return;
    let action = null;
    if (e.key === " " || e.key === "ArrowRight" || e.key === "PageDown") action = "next";
    else if (e.key === "ArrowLeft" || e.key === "PageUp") action = "back";
    else if (/^[1-9]$/.test(e.key) && Number(e.key) <= data.chapters) action = "chapter-" + e.key;
    if (!action) return;
    e.preventDefault();
    setTriggerValue("key", action);
  }
  document.addEventListener("keydown", onKey);
  return function () { document.removeEventListener("keydown", onKey); };
}
