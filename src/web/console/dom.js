// Building the page: every value shown comes from the agent's JSON and goes
// into the page as text (a text node), never as markup.

// An element with attributes ("class", "on<event>" handlers, others as
// attributes; null, undefined and false left out) and children (nodes, or
// anything else as text; arrays flattened).
export function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export const byId = id => document.getElementById(id);

// Replaces the children of element `id`, if it is still on the page (a
// fetch may answer after the view changed).
export function fill(id, ...children) {
  byId(id)?.replaceChildren(...children);
}

// A bar for `ratio` (0 to 1) with `text` beside it.
export function bar(ratio, text) {
  const r = ratio === undefined || isNaN(ratio) ? 0 : Math.max(0, Math.min(1, ratio));
  const filled = h("div", {});
  filled.style.width = `${(100 * r).toFixed(1)}%`; // CSSOM: allowed under the page's style-src 'self'.
  return [h("div", { class: "bar" }, filled), h("span", { class: "muted" }, text)];
}

// A table: one header row of `titles`, then `rows` (each an array of cells,
// a cell a value or a [value, attrs] pair). A column whose cells are all
// numbers (class "num") has its title over them, on the right. Each cell
// carries its column's title (data-label): on a phone each row is a block
// of "title value" lines (console.css), not a table wider than the screen.
export function table(attrs, titles, rows) {
  const isNumeric = i => rows.length > 0 && rows.every(cells => Array.isArray(cells[i]) && cells[i][1]?.class === "num");
  const cell = (c, i) => Array.isArray(c) ? h("td", { ...c[1], "data-label": titles[i] }, c[0])
    : h("td", { "data-label": titles[i] }, c);
  return h("table", { ...attrs, class: ["rows", attrs.class].filter(Boolean).join(" ") },
    h("tr", {}, titles.map((t, i) => h("th", { class: isNumeric(i) ? "num" : null }, t))),
    rows.map(cells => h("tr", {}, cells.map(cell))));
}
