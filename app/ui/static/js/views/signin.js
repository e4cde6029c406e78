// Sign-in: the key is checked with one API call before it is kept (sessionStorage, this tab only).

import { apiKey, verifyKey } from "../api.js";
import { append, field, h } from "../dom.js";

export async function signInView(page, ctx, signedIn) {
  const input = h("input", {
    type: "password",
    name: "api-key",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const status = h("p", { class: "form-status", role: "status", "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "card signin", novalidate: true },
    field(
      "API key",
      input,
      "Made with: recloop keys create --owner NAME. Kept in this tab only, sent only as a header.",
    ),
    submit,
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) {
      status.className = "form-status error-text";
      status.textContent = "Enter an API key.";
      input.focus();
      return;
    }
    submit.disabled = true;
    status.className = "form-status";
    status.textContent = "Checking the key…";
    try {
      await verifyKey(key);
    } catch (error) {
      submit.disabled = false;
      status.className = "form-status error-text";
      status.textContent =
        error.status === 401 ? `That key was refused: ${error.detail}.` : ctx.describeError(error);
      input.select();
      return;
    }
    input.value = "";
    apiKey.set(key);
    signedIn();
  });
  append(
    page,
    h("h1", null, "Sign in"),
    h(
      "p",
      null,
      "The recloop explorer shows your sessions, their loops and the evaluation runs. It uses the same API as any client, with your key.",
    ),
    form,
  );
  input.focus();
}
