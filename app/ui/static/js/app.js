// The explorer's shell: hash routes (so deep links work without server routes and nothing but
// the route is ever in the URL), the sign-in gate, and one notice area for messages.

import { ApiError, apiKey, setUnauthorizedHandler } from "./api.js";
import { append, clear, fill, h } from "./dom.js";
import { catalogView, itemView } from "./views/catalog.js";
import { runsView, runView } from "./views/runs.js";
import { sessionView } from "./views/session.js";
import { sessionsView } from "./views/sessions.js";
import { signInView } from "./views/signin.js";

const ROUTES = [
  {
    pattern: /^\/sessions\/([0-9a-fA-F-]{36})$/,
    section: "sessions",
    view: (page, ctx, m) => sessionView(page, ctx, m[1]),
  },
  { pattern: /^\/sessions$/, section: "sessions", view: sessionsView },
  { pattern: /^\/catalog$/, section: "catalog", view: catalogView },
  {
    pattern: /^\/items\/(\d+)$/,
    section: "catalog",
    view: (page, ctx, m) => itemView(page, ctx, Number(m[1])),
  },
  { pattern: /^\/runs$/, section: "runs", view: runsView },
  {
    pattern: /^\/runs\/([^/]+)$/,
    section: "runs",
    view: (page, ctx, m) => runView(page, ctx, decodeURIComponent(m[1])),
  },
];

const main = document.getElementById("view");
const notice = document.getElementById("notice");
const nav = document.getElementById("nav");
const signOut = document.getElementById("sign-out");
let renderToken = 0;
let cleanups = [];
let flash = null; // a message for the next page (navigating clears the notice area)

/** Show a message above the page (errors stay until dismissed or the next page). */
export function notify(message, kind = "error") {
  clear(notice);
  if (!message) return;
  append(
    notice,
    h(
      "div",
      { class: ["notice", `notice-${kind}`] },
      h("span", null, message),
      h(
        "button",
        {
          type: "button",
          class: "link-button",
          onClick: () => clear(notice),
          "aria-label": "Dismiss message",
        },
        "×",
      ),
    ),
  );
}

/** A readable sentence for anything a view may throw. */
export function describeError(error) {
  if (error instanceof ApiError) return error.readable;
  return `Unexpected error in the page: ${error?.message ?? error}. Reload and try again.`;
}

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/sessions";
  const [path, search = ""] = raw.split("?");
  return { path, query: new URLSearchParams(search) };
}

/** Go to a route; `message` ({text, kind}) is shown on the page it leads to. */
export function navigate(path, query, message = null) {
  const search = query && [...query].length ? `?${query}` : "";
  const target = `#${path}${search}`;
  flash = message;
  if (location.hash === target) render();
  else location.hash = target;
}

async function render({ keepNotice = false } = {}) {
  const token = ++renderToken;
  for (const cleanup of cleanups.splice(0)) cleanup();
  if (!keepNotice) notify(null);
  if (flash) notify(flash.text, flash.kind);
  flash = null;
  const signedIn = Boolean(apiKey.get());
  nav.hidden = !signedIn;
  signOut.hidden = !signedIn;
  const container = h("div", { class: "page" });
  fill(main, container);
  const { path, query } = parseHash();
  const ctx = {
    query,
    notify,
    describeError,
    navigate,
    rerender: () => render({ keepNotice: true }),
    onLeave: (cleanup) => cleanups.push(cleanup),
    isCurrent: () => token === renderToken,
  };
  if (!signedIn) {
    await signInView(container, ctx, () => render());
    return;
  }
  const route = ROUTES.map((r) => ({ ...r, match: path.match(r.pattern) })).find((r) => r.match);
  for (const link of nav.querySelectorAll("a")) {
    if (route && link.dataset.section === route.section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!route) {
    append(
      container,
      h("h1", null, "Page not found"),
      h("p", null, h("a", { href: "#/sessions" }, "Back to the sessions")),
    );
    return;
  }
  try {
    await route.view(container, ctx, route.match);
  } catch (error) {
    if (token === renderToken) {
      append(container, h("p", { class: "error-text" }, describeError(error)));
      notify(describeError(error));
    }
  }
  if (token === renderToken && document.activeElement === document.body) main.focus({ preventScroll: true });
}

setUnauthorizedHandler((error) => {
  apiKey.clear();
  render().then(() => notify(`Your API key is no longer accepted (${error.detail}). Sign in again.`));
});

signOut.addEventListener("click", () => {
  apiKey.clear();
  render().then(() => notify("Signed out.", "info"));
});

// The skip link's "#view" would be read as a route: move the focus instead.
document.querySelector(".skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});

window.addEventListener("hashchange", () => render());
render();
