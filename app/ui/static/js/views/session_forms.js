// The session page's forms that act on the session through the API (steer, record consumption,
// delete), and the status line every form of the page reports in; each form takes what it uses.

import { post, remove } from "../api.js";
import { append, definitionList, field, fill, h } from "../dom.js";
import { chosenItems, itemLink, itemPicker } from "./catalog.js";
import { parserText, updateList } from "./steering.js";

export function formStatus() {
  return h("p", { class: "form-status", role: "status", "aria-live": "polite" });
}

export function say(status, text, kind) {
  status.className = ["form-status", kind === "error" ? "error-text" : kind === "ok" ? "ok-text" : null]
    .filter(Boolean)
    .join(" ");
  status.textContent = text;
}

export function steerForm({ base, ctx, refresh, preferences, commands }) {
  const text = h("input", {
    name: "text",
    required: true,
    maxlength: 500,
    autocomplete: "off",
    placeholder: "e.g. no horror, something from the 90s",
  });
  const status = formStatus();
  const output = h("div", { class: "steer-result" });
  const reset = h("button", { type: "button", class: "secondary" }, "Reset preferences");
  const form = h(
    "form",
    { class: "card steer-form", id: "section-steer" },
    h("h2", null, "Steer in words"),
    field("Command", text),
    h("div", { class: "button-row" }, h("button", { type: "submit" }, "Send command"), reset),
    status,
    output,
    h("h3", null, "Preferences now"),
    preferences,
    h("h3", null, "Command log"),
    commands,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!text.value.trim()) {
      say(status, "Type what the user wants.", "error");
      return;
    }
    say(status, "Parsing…");
    try {
      const result = await post(`${base}/commands`, { text: text.value });
      say(
        status,
        result.understood ? "Understood." : "Partly understood: see below.",
        result.understood ? "ok" : "error",
      );
      fill(
        output,
        definitionList([
          ["Parser", parserText(result)],
          ["Understood", result.understood ? "yes" : "no"],
          ["Not understood", result.unparsed.length ? result.unparsed.join("; ") : "—"],
        ]),
        h("h3", null, "This command"),
        updateList(result.parsed),
        h("h3", null, "New recommendations"),
        h(
          "ol",
          { class: "new-recommendations" },
          result.recommendations.map((it) =>
            h("li", null, itemLink(it.id, it.title), h("span", { class: "muted" }, ` #${it.id}`)),
          ),
        ),
      );
      text.value = "";
      await refresh();
    } catch (error) {
      say(status, ctx.describeError(error), "error");
    }
  });
  reset.addEventListener("click", async () => {
    try {
      await remove(`${base}/preferences`);
      say(status, "Preferences reset.", "ok");
      output.replaceChildren();
      await refresh();
    } catch (error) {
      say(status, ctx.describeError(error), "error");
    }
  });
  return form;
}

export function consumeForm({ base, ctx, refresh }) {
  const chosen = chosenItems();
  const status = formStatus();
  const form = h(
    "form",
    { class: "card consume-form", id: "section-consume" },
    h("h2", null, "Record what the user consumed"),
    itemPicker("Find the item", (it) => chosen.add(it)),
    h("p", { class: "label-like", id: "consumed-label" }, "Consumed, oldest first"),
    chosen.element,
    h("button", { type: "submit" }, "Record"),
    status,
  );
  chosen.element.setAttribute("aria-labelledby", "consumed-label");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!chosen.ids().length) {
      say(status, "Add at least one item first.", "error");
      return;
    }
    try {
      const updated = await post(`${base}/consumed`, { items: chosen.ids() });
      chosen.reset();
      say(status, `Recorded: the history has ${updated.history.length} items now.`, "ok");
      await refresh();
    } catch (error) {
      say(status, ctx.describeError(error), "error");
    }
  });
  return form;
}

export function deleteSection({ base, ctx }) {
  const dialog = h(
    "dialog",
    { class: "confirm", "aria-labelledby": "delete-title" },
    h("h2", { id: "delete-title" }, "Delete this session?"),
    h(
      "p",
      null,
      "Its loops, rounds, steering memory and checkpoints are deleted too. This cannot be undone.",
    ),
  );
  const status = formStatus();
  const cancel = h(
    "button",
    { type: "button", class: "secondary", onClick: () => dialog.close() },
    "Cancel",
  );
  const confirm = h("button", { type: "button", class: "danger" }, "Delete for good");
  append(dialog, h("div", { class: "button-row" }, cancel, confirm));
  confirm.addEventListener("click", async () => {
    confirm.disabled = true;
    try {
      await remove(base);
      dialog.close();
      ctx.navigate("/sessions", null, { text: "Session deleted.", kind: "info" });
    } catch (error) {
      dialog.close();
      say(status, ctx.describeError(error), "error");
    } finally {
      confirm.disabled = false;
    }
  });
  const open = h(
    "button",
    { type: "button", class: "danger", onClick: () => (dialog.showModal(), cancel.focus()) },
    "Delete session…",
  );
  return h("section", { class: "card danger-zone" }, h("h2", null, "Delete"), open, status, dialog);
}
