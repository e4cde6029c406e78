// The /v1 API, as the page uses it. The API key lives in sessionStorage (this tab only, gone when
// it closes) and travels only in the Authorization header: never in a URL, never in the page.

const KEY_STORAGE = "recloop.apiKey";

export const apiKey = {
  get: () => sessionStorage.getItem(KEY_STORAGE),
  set: (key) => sessionStorage.setItem(KEY_STORAGE, key),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

/** An answer other than 2xx, with the API's {detail, field} body and a sentence for people. */
export class ApiError extends Error {
  constructor(status, detail, field = null, retryAfter = null) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.field = field;
    this.retryAfter = retryAfter;
  }

  get readable() {
    const detail = this.detail || "no details";
    switch (this.status) {
      case 0:
        return `The server cannot be reached (${detail}). Is recloop running?`;
      case 401:
        return `Your API key was refused: ${detail}.`;
      case 404:
        return `Not found: ${detail}.`;
      case 409:
        return `Not now: ${detail}.`;
      case 422:
        return this.field ? `Please check ${this.field}: ${detail}.` : `Please check the input: ${detail}.`;
      case 503: {
        const retry = this.retryAfter ? ` Try again in ${this.retryAfter} s.` : " Try again shortly.";
        return `The service is unavailable right now: ${detail}.${retry}`;
      }
      default:
        return `Something went wrong (HTTP ${this.status}): ${detail}.`;
    }
  }
}

let onUnauthorized = () => {};
/** What the app does when the key stops working (sign-in again). */
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler;
}

async function errorFrom(response) {
  let detail = response.statusText || "error";
  let field = null;
  try {
    const body = await response.json();
    if (body && typeof body.detail === "string") detail = body.detail;
    if (body && typeof body.field === "string") field = body.field;
  } catch {
    // not JSON (a proxy's page, say): the status line is all we have
  }
  return new ApiError(response.status, detail, field, response.headers.get("Retry-After"));
}

function url(path, query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

async function send(method, path, { query, body, accept = "application/json", key } = {}) {
  const headers = { Accept: accept, Authorization: `Bearer ${key ?? apiKey.get() ?? ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url(path, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(0, error.message || "network error");
  }
  if (!response.ok) {
    const error = await errorFrom(response);
    if (error.status === 401 && key === undefined) onUnauthorized(error);
    throw error;
  }
  return response;
}

export async function get(path, query) {
  return (await send("GET", path, { query })).json();
}

export async function post(path, body) {
  return (await send("POST", path, { body })).json();
}

export async function remove(path) {
  const response = await send("DELETE", path);
  return response.status === 204 ? null : response.json();
}

/** Check a key before keeping it: a cheap authenticated read. */
export async function verifyKey(key) {
  await send("GET", "/v1/sessions", { query: { limit: 1 }, key });
}

/** An authenticated file (a run's plot) as an object URL for <img src>; revoke it when done. */
export async function blobUrl(path) {
  const response = await send("GET", path, { accept: "*/*" });
  return URL.createObjectURL(await response.blob());
}

/**
 * POST with Accept: text/event-stream and call onEvent(name, data) for each Server-Sent Event as
 * it arrives. EventSource cannot send a POST body or an Authorization header, hence fetch and a
 * stream reader. Resolves with the `result` event's data; an `error` event rejects with ApiError.
 */
export async function stream(path, body, onEvent) {
  const response = await send("POST", path, { body, accept: "text/event-stream" });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let result = null;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // Events end with a blank line; a "\r" at the end of a chunk waits for its "\n".
      buffer = (buffer + value).replaceAll("\r\n", "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (!event) continue;
        if (event.name === "error") {
          throw new ApiError(event.data.status ?? 500, event.data.detail, event.data.field ?? null);
        }
        if (event.name === "result") result = event.data;
        onEvent(event.name, event.data);
      }
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error instanceof ApiError ? error : new ApiError(0, error.message || "the stream broke off");
  }
  if (result === null) throw new ApiError(0, "the stream ended before the loop's result arrived");
  return result;
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue; // a comment: sse-starlette's keep-alive pings
    const colon = line.indexOf(":");
    const fieldName = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (fieldName === "event") name = value;
    else if (fieldName === "data") data.push(value);
  }
  if (!data.length) return null;
  return { name, data: JSON.parse(data.join("\n")) };
}
