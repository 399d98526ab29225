// The chart's tooltips, as Vega-Tooltip showed them (the player no longer loads it: see
// charts/player/__init__.py): a mark's tooltip value as a table of its fields (a `title` field as
// the heading), in one box beside the pointer that stays inside the window. Its look is in
// tooltip.css (#vg-tooltip-element, the same id, so the same rules apply).
(function () {
  "use strict";
  var ID = "vg-tooltip-element", OFFSET = 10;

  function escape(text) { return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;"); }
  function isObject(value) { return value === Object(value); }
  function asText(value) { return isObject(value) ? JSON.stringify(value) : value; }

  // A string as it is, a list in brackets, an object as a table of its fields.
  function tooltipHtml(value) {
    if (Array.isArray(value)) return "[" + value.map(function (v) { return escape(asText(v)); }).join(", ") + "]";
    if (!isObject(value)) return escape(value);
    var html = value.title ? "<h2>" + escape(value.title) + "</h2>" : "";
    var keys = Object.keys(value).filter(function (key) {
      return key !== "title" && value[key] !== undefined;
    });
    if (keys.length) {
      html += "<table>" + keys.map(function (key) {
        return '<tr><td class="key">' + escape(key) + '</td><td class="value">' +
          escape(asText(value[key])) + "</td></tr>";
      }).join("") + "</table>";
    }
    return html || "{}";
  }

  // Below right of the pointer, else below left, above right, above left: the first corner
  // where the whole box fits in the window. A box taller than the room above and below the
  // pointer goes beside it, right or else left, level with it as far as the window lets it (its
  // top kept in view): it never covers the mark pointed at. Too wide for either side too, it is
  // moved into the window.
  function place(event, box) {
    var x = event.clientX, y = event.clientY;
    var right = x + OFFSET, left = x - box.width - OFFSET;
    var below = y + OFFSET, above = y - box.height - OFFSET;
    var corners = [[right, below], [left, below], [right, above], [left, above]];
    for (var i = 0; i < corners.length; i++) {
      var c = corners[i];
      if (c[0] >= 0 && c[1] >= 0 && c[0] + box.width <= window.innerWidth &&
          c[1] + box.height <= window.innerHeight) return c;
    }
    var side = right + box.width <= window.innerWidth ? right
      : left >= 0 ? left : Math.max(0, Math.min(left, window.innerWidth - box.width));
    return [side, Math.max(0, Math.min(y - box.height / 2, window.innerHeight - box.height))];
  }

  // A Vega tooltip handler (view.tooltip): `value` null or "" hides the box.
  window.playerTooltip = function (theme) {
    return function (handler, event, item, value) {
      var el = document.getElementById(ID);
      if (!el) {
        el = document.createElement("div");
        el.id = ID;
        el.className = "vg-tooltip";
        (document.fullscreenElement || document.body).appendChild(el);
      }
      if (value === null || value === undefined || value === "") {
        el.classList.remove("visible", theme + "-theme");
        return;
      }
      el.innerHTML = tooltipHtml(value);
      el.classList.add("visible", theme + "-theme");
      var corner = place(event, el.getBoundingClientRect());
      el.style.left = corner[0] + "px";
      el.style.top = corner[1] + "px";
    };
  };
})();
