// Building the page. Every element is made with createElement and every piece of data becomes a
// text node: no string from the API (an LLM's reason, a user's command, a title) ever goes
// through an HTML parser, so markup in it shows literally instead of running.

const SVG_NS = "http://www.w3.org/2000/svg";
const FORBIDDEN_PROPS = new Set(["innerHTML", "outerHTML", "srcdoc"]);

function setProps(el, props) {
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (FORBIDDEN_PROPS.has(key)) throw new Error(`dom: ${key} is not allowed`);
    if (key.startsWith("on")) {
      if (typeof value !== "function") throw new Error(`dom: ${key} must be a function`);
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "value" || key === "checked" || key === "selected") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

/** Append children: strings and numbers become text nodes, arrays are flattened, null is skipped. */
export function append(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** h("a", {href: "#/x", class: "c", onClick: fn}, "text", otherNode) */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  return append(el, ...children);
}

/** The SVG counterpart of h(). */
export function svg(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  return append(el, ...children);
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

/** Replace the children of `el` (with append()'s rules: null and false are skipped). */
export function fill(el, ...children) {
  return append(clear(el), ...children);
}

// --- formatting ------------------------------------------------------------------------------

export function formatTime(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

export function formatNumber(value, digits = 3) {
  if (value === null || value === undefined) return "—";
  if (typeof value !== "number") return String(value);
  // No digit grouping: integers here are ids, years and counts ("1995", not "1,995").
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

/** Words for a field name: "reward_rank" -> "reward rank". */
export function label(key) {
  return String(key).replaceAll("_", " ");
}

/** A value of unknown shape (fields the API may add later) as readable text. */
export function plain(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number") return formatNumber(value);
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(plain).join(", ");
  return Object.entries(value)
    .map(([k, v]) => `${label(k)}: ${plain(v)}`)
    .join("; ");
}

/** A <dl> of label/value pairs; values may be nodes or anything plain() can show. */
export function definitionList(pairs, props = {}) {
  return h(
    "dl",
    { class: ["pairs", props.class] },
    pairs
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => [
        h("dt", null, name),
        h("dd", null, value instanceof Node ? value : plain(value)),
      ]),
  );
}

/**
 * A table in a horizontally scrolling wrapper (narrow screens scroll it, the page does not).
 * A row is an array of cells, or {cells, props} to give the <tr> attributes. With `stack`, each
 * cell carries its column's name, and narrow screens show every row as a small card instead.
 */
export function table(headers, rows, { class: className, stack = false } = {}) {
  const row = (entry) => {
    const cells = Array.isArray(entry) ? entry : entry.cells;
    return h(
      "tr",
      Array.isArray(entry) ? null : entry.props,
      cells.map((cell, index) => h("td", stack ? { "data-label": headers[index] } : null, cell)),
    );
  };
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: [stack && "stack", className] },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          headers.map((name) => h("th", { scope: "col" }, name)),
        ),
      ),
      h("tbody", null, rows.map(row)),
    ),
  );
}

/** A labelled form field: the label wraps nothing, it points at the control by id. */
let fieldCounter = 0;
export function field(labelText, control, hint) {
  const id = control.id || `field-${++fieldCounter}`;
  control.id = id;
  const hintNode = hint ? h("small", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintNode) control.setAttribute("aria-describedby", hintNode.id);
  return h("div", { class: "field" }, h("label", { for: id }, labelText), control, hintNode);
}

export function badge(text, kind) {
  return h("span", { class: ["badge", kind && `badge-${kind}`] }, text);
}

export function spinner(text = "Loading…") {
  return h("p", { class: "loading", role: "status" }, text);
}
