// The sessions list (filters and pages kept in the route, so a filtered page can be linked and
// reloaded) and the form that creates a session from catalog picks.

import { get, post } from "../api.js";
import { append, badge, field, fill, formatTime, h, spinner, table } from "../dom.js";
import { chosenItems, itemPicker } from "./catalog.js";

const STATUSES = ["idle", "running", "awaiting_feedback"];
const PAGE_SIZES = [10, 25, 50, 100];

export function statusBadge(status) {
  const kind = { idle: "ok", running: "busy", awaiting_feedback: "wait" }[status];
  return badge(status.replaceAll("_", " "), kind);
}

/** A datetime-local value (local time, no zone) as the ISO instant the API filters on. */
function instant(local) {
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function filterForm(ctx, query) {
  const userId = h("input", { name: "user_id", value: query.get("user_id") ?? "", autocomplete: "off" });
  const status = h(
    "select",
    { name: "status" },
    h("option", { value: "" }, "any"),
    STATUSES.map((s) =>
      h("option", { value: s, selected: query.get("status") === s }, s.replaceAll("_", " ")),
    ),
  );
  const after = h("input", {
    type: "datetime-local",
    name: "created_after",
    step: 1,
    value: query.get("created_after") ?? "",
  });
  const before = h("input", {
    type: "datetime-local",
    name: "created_before",
    step: 1,
    value: query.get("created_before") ?? "",
  });
  const limit = h(
    "select",
    { name: "limit" },
    PAGE_SIZES.map((n) =>
      h("option", { value: n, selected: Number(query.get("limit") ?? 25) === n }, String(n)),
    ),
  );
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter sessions" },
    field("User id", userId),
    field("Status", status),
    field("Created after", after),
    field("Created before", before),
    field("Per page", limit),
    h(
      "div",
      { class: "filter-actions" },
      h("button", { type: "submit" }, "Apply"),
      h("a", { href: "#/sessions", class: "button secondary" }, "Clear"),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const control of [userId, status, after, before]) {
      if (control.value.trim()) next.set(control.name, control.value.trim());
    }
    next.set("limit", limit.value);
    ctx.navigate("/sessions", next);
  });
  return form;
}

function pager(ctx, query, count, limit, offset) {
  const first = count ? offset + 1 : 0;
  const last = Math.min(offset + limit, count);
  const to = (newOffset) => {
    const next = new URLSearchParams(query);
    next.set("offset", String(Math.max(0, newOffset)));
    return `#/sessions?${next}`;
  };
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    offset > 0
      ? h("a", { href: to(offset - limit), rel: "prev" }, "← Previous")
      : h("span", { class: "muted" }, "← Previous"),
    h("span", { class: "pager-position" }, `${first}–${last} of ${count}`),
    offset + limit < count
      ? h("a", { href: to(offset + limit), rel: "next" }, "Next →")
      : h("span", { class: "muted" }, "Next →"),
  );
}

function sessionsTable(sessions) {
  const time = (iso) => h("time", { datetime: iso }, formatTime(iso));
  return table(
    ["User", "Status", "Loops", "Last activity", "Created", "Session"],
    sessions.map((s) => ({
      props: { dataset: { sessionId: s.id } },
      cells: [
        h("a", { href: `#/sessions/${s.id}`, class: "user-link" }, s.user_id),
        statusBadge(s.status),
        String(s.n_loops),
        time(s.updated_at),
        time(s.created_at),
        h(
          "a",
          { href: `#/sessions/${s.id}`, "aria-label": `Open session ${s.id}` },
          h("code", null, s.id.slice(0, 8)),
        ),
      ],
    })),
    { class: "sessions", stack: true },
  );
}

function createForm(ctx) {
  const userId = h("input", { name: "user_id", required: true, autocomplete: "off", maxlength: 200 });
  const typed = h("input", {
    name: "history_ids",
    autocomplete: "off",
    inputmode: "numeric",
    placeholder: "e.g. 49 180 257",
  });
  const chosen = chosenItems();
  const status = h("p", { class: "form-status", role: "status", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "card create-session" },
    h("h2", null, "New session"),
    field("User id", userId, "Your identifier of the end user."),
    itemPicker("Find items for the history", (it) => chosen.add(it)),
    h("p", { class: "label-like", id: "chosen-label" }, "History, oldest first"),
    chosen.element,
    field("…or item ids", typed, "Separated by spaces or commas; added after the picked items."),
    h("button", { type: "submit" }, "Create session"),
    status,
  );
  chosen.element.setAttribute("aria-labelledby", "chosen-label");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const extra = typed.value.split(/[\s,]+/).filter(Boolean);
    if (extra.some((v) => !/^\d+$/.test(v))) {
      status.className = "form-status error-text";
      status.textContent = "Item ids are whole numbers, separated by spaces or commas.";
      return;
    }
    const history = [...chosen.ids(), ...extra.map(Number)];
    status.className = "form-status";
    status.textContent = "Creating…";
    try {
      const created = await post("/v1/sessions", { user_id: userId.value.trim(), history });
      ctx.navigate(`/sessions/${created.id}`);
    } catch (error) {
      status.className = "form-status error-text";
      status.textContent = ctx.describeError(error);
    }
  });
  return form;
}

export async function sessionsView(page, ctx) {
  const query = ctx.query;
  const limit = Number(query.get("limit") ?? 25);
  const offset = Number(query.get("offset") ?? 0);
  const results = h("section", { "aria-label": "Sessions", class: "results" }, spinner());
  append(
    page,
    h("h1", null, "Sessions"),
    h(
      "div",
      { class: "columns" },
      h("div", { class: "main-column" }, filterForm(ctx, query), results),
      h("aside", { class: "side-column" }, createForm(ctx)),
    ),
  );
  const found = await get("/v1/sessions", {
    user_id: query.get("user_id"),
    status: query.get("status"),
    created_after: query.get("created_after") && instant(query.get("created_after")),
    created_before: query.get("created_before") && instant(query.get("created_before")),
    limit,
    offset,
  });
  fill(
    results,
    h("p", { class: "count", role: "status" }, `${found.count} session${found.count === 1 ? "" : "s"}`),
    found.data.length
      ? sessionsTable(found.data)
      : h("p", { class: "muted" }, "No session matches these filters."),
    pager(ctx, query, found.count, limit, offset),
  );
}
