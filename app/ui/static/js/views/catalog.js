// The catalog: search, item pages, a picker other views use to choose items, and a title cache.

import { get } from "../api.js";
import { append, definitionList, field, fill, h, label, plain, spinner, table } from "../dom.js";

const items = new Map(); // id -> Promise<item>: each item is fetched once per page load

/** The item with this id (cached). */
export function item(id) {
  if (!items.has(id)) {
    const request = get(`/v1/items/${encodeURIComponent(id)}`);
    request.catch(() => items.delete(id)); // a failed look-up is tried again next time
    items.set(id, request);
  }
  return items.get(id);
}

/** Items by id, at most `parallel` requests at a time; failures come back as null. */
export async function itemsById(ids, parallel = 6) {
  const out = new Map();
  const queue = [...new Set(ids)];
  async function worker() {
    while (queue.length) {
      const id = queue.shift();
      out.set(id, await item(id).catch(() => null));
    }
  }
  await Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker));
  return out;
}

export function itemLink(id, title) {
  return h("a", { href: `#/items/${encodeURIComponent(id)}` }, title ?? `item ${id}`);
}

/** All attributes as text: "genres: Comedy, Drama; year: 1995". */
function attributesText(attributes) {
  return Object.keys(attributes ?? {}).length ? plain(attributes) : "—";
}

/** The attributes that tell items apart at a glance (genres, year) when the catalog has them. */
export function attributesSummary(attributes) {
  const key = Object.fromEntries(
    ["genres", "year"].filter((k) => k in (attributes ?? {})).map((k) => [k, attributes[k]]),
  );
  return attributesText(Object.keys(key).length ? key : attributes);
}

/** A search box whose results each have an "Add" button calling onPick(item). */
export function itemPicker(labelText, onPick) {
  const input = h("input", { type: "search", autocomplete: "off", placeholder: "a title, e.g. toy story" });
  const results = h("ul", { class: "picker-results", "aria-live": "polite" });
  let timer = null;
  let latest = 0;
  async function search() {
    const q = input.value.trim();
    const token = ++latest;
    if (!q) {
      results.replaceChildren();
      return;
    }
    try {
      const found = await get("/v1/items", { q, limit: 8 });
      if (token !== latest) return;
      fill(
        results,
        ...(found.data.length
          ? found.data.map((it) =>
              h(
                "li",
                null,
                h(
                  "button",
                  {
                    type: "button",
                    class: "small",
                    onClick: () => onPick(it),
                    "aria-label": `Add ${it.title}`,
                  },
                  "Add",
                ),
                " ",
                it.title,
                h("span", { class: "muted" }, ` #${it.id}`),
              ),
            )
          : [h("li", { class: "muted" }, `No title contains “${q}”.`)]),
      );
    } catch (error) {
      if (token === latest) fill(results, h("li", { class: "error-text" }, error.readable ?? String(error)));
    }
  }
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(search, 250);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault(); // searching, not submitting the surrounding form
      clearTimeout(timer);
      search();
    }
  });
  return h("div", { class: "picker" }, field(labelText, input), results);
}

/** An ordered, editable list of chosen items (what a picker adds to). */
export function chosenItems() {
  const chosen = [];
  const list = h("ol", { class: "chosen" });
  function draw() {
    fill(
      list,
      ...chosen.map((it, index) =>
        h(
          "li",
          null,
          it.title,
          h("span", { class: "muted" }, ` #${it.id} `),
          h(
            "button",
            {
              type: "button",
              class: "small link-button",
              "aria-label": `Remove ${it.title}`,
              onClick: () => {
                chosen.splice(index, 1);
                draw();
              },
            },
            "remove",
          ),
        ),
      ),
    );
  }
  return {
    element: list,
    add(it) {
      chosen.push(it);
      draw();
    },
    ids: () => chosen.map((it) => it.id),
    reset() {
      chosen.length = 0;
      draw();
    },
  };
}

export async function catalogView(page, ctx) {
  const q = ctx.query.get("q") ?? "";
  const input = h("input", { type: "search", name: "q", value: q, autocomplete: "off" });
  const form = h(
    "form",
    { role: "search", class: "inline-form" },
    field("Title contains", input),
    h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.navigate("/catalog", new URLSearchParams(input.value.trim() ? { q: input.value.trim() } : {}));
  });
  const results = h("section", { "aria-label": "Results" });
  append(page, h("h1", null, "Catalog"), form, results);
  if (!q) {
    append(
      results,
      h("p", { class: "muted" }, "Search the catalog by title; open an item for its attributes."),
    );
    input.focus();
    return;
  }
  append(results, spinner());
  const found = await get("/v1/items", { q, limit: 50 });
  fill(
    results,
    h("p", null, `${found.count} item${found.count === 1 ? "" : "s"} found.`),
    table(
      ["Id", "Title", "Attributes"],
      found.data.map((it) => [String(it.id), itemLink(it.id, it.title), attributesSummary(it.attributes)]),
      { class: "items" },
    ),
  );
}

export async function itemView(page, ctx, id) {
  append(page, spinner());
  const it = await item(id);
  fill(
    page,
    h("p", { class: "breadcrumb" }, h("a", { href: "#/catalog" }, "Catalog"), " / item ", String(it.id)),
    h("h1", null, it.title),
    definitionList([
      ["Id", String(it.id)],
      ...Object.entries(it.attributes ?? {}).map(([k, v]) => [label(k), v]),
    ]),
  );
}
