// A session's loops as the page shows them: the rounds table, a loop's details, and the live
// view of a running loop (one line per node update, from the SSE stream). Fields the API adds
// later (fallback causes, usage details) are shown generically when present.

import { get, stream } from "../api.js";
import {
  append,
  badge,
  clear,
  definitionList,
  fill,
  formatDuration,
  formatNumber,
  formatTime,
  h,
  label,
  plain,
  table,
} from "../dom.js";
import { item, itemLink } from "./catalog.js";

const ROUND_COLUMNS = new Set([
  "loop_index",
  "round",
  "item",
  "item_title",
  "rec_reason",
  "reward_score",
  "reward_rank",
  "decision",
  "user_reason",
  "rec_fallback",
  "user_fallback",
  "rec_fallback_cause",
  "user_fallback_cause",
  "reason_reading",
  "usage",
  "llm_usage",
  "rec_usage",
  "user_usage",
  "llm_attempts",
  "llm_calls",
  "prompt_tokens",
  "completion_tokens",
]);
const LOOP_FIELDS_SHOWN = new Set([
  ...ROUND_COLUMNS,
  "status",
  "params",
  "final_item",
  "final_reason",
  "stop_reason",
  "started_at",
  "finished_at",
  "duration_ms",
  "rounds",
]);

// --- small renderers ------------------------------------------------------------------------

/** LLM usage of a round or loop: its `usage` object when the API has one, else the flat counters. */
function usageOf(record) {
  for (const key of ["usage", "llm_usage"]) {
    if (record[key] && typeof record[key] === "object") return record[key];
  }
  const flat = {};
  if ("llm_calls" in record) flat.calls = record.llm_calls;
  for (const key of ["prompt_tokens", "completion_tokens"]) if (key in record) flat[key] = record[key];
  return Object.keys(flat).length ? flat : null;
}

// Short names for the usage fields the API has; a field it adds later shows under its own name.
const USAGE_NAMES = {
  prompt_tokens: "prompt",
  completion_tokens: "completion",
  cached_tokens: "cached",
  counted_calls: "counted",
};

/** "2 calls · prompt 640 · completion 120 · cached 512 · 1.84 s"; zero counters are left out. */
export function usageText(usage) {
  if (!usage) return "—";
  if (!usage.calls && Object.values(usage).every((v) => !v || typeof v === "object")) return "no LLM call";
  const parts = [];
  for (const [key, value] of Object.entries(usage)) {
    if (value === null || value === undefined || (key !== "calls" && !value)) continue;
    if (key === "calls") parts.push(`${value} call${value === 1 ? "" : "s"}`);
    else if (key === "seconds") parts.push(`${formatNumber(value, 2)} s`);
    else if (typeof value === "object") parts.push(`${label(key)} (${usageText(value)})`);
    else parts.push(`${USAGE_NAMES[key] ?? label(key)} ${formatNumber(value, 2)}`);
  }
  return parts.join(" · ");
}

/** A round's LLM cell: its usage, each agent's share, and every attempt (open on demand). */
function roundUsage(round) {
  const shares = ["rec", "user"]
    .filter((agent) => round[`${agent}_usage`])
    .map((agent) => h("div", { class: "muted" }, `${agent} agent: ${usageText(round[`${agent}_usage`])}`));
  const attempts = round.llm_attempts ?? [];
  return [
    usageText(usageOf(round)),
    shares,
    attempts.length
      ? h(
          "details",
          { class: "attempts" },
          h("summary", null, `${attempts.length} attempt${attempts.length === 1 ? "" : "s"}`),
          h(
            "ol",
            null,
            attempts.map((a) =>
              h(
                "li",
                { class: a.ok ? null : "error-text" },
                `${a.agent} #${a.attempt} ${a.ok ? "ok" : "failed"} · ${formatNumber(a.seconds, 2)} s · `,
                `prompt ${a.prompt_tokens} · completion ${a.completion_tokens} · cached ${a.cached_tokens}`,
                a.counted && a.counted !== "server" ? ` (${a.counted} count)` : "",
                a.failure ? ` — ${a.failure}` : "",
              ),
            ),
          ),
        )
      : null,
  ];
}

function fallbackText(round) {
  const parts = [];
  for (const agent of ["rec", "user"]) {
    if (!round[`${agent}_fallback`]) continue;
    const cause = round[`${agent}_fallback_cause`];
    parts.push(`${agent} agent fell back${cause ? `: ${plain(cause)}` : ""}`);
  }
  return parts.length ? parts.join("; ") : "none";
}

export function decisionBadge(decision) {
  return badge(decision, decision === "accept" ? "ok" : "no");
}

export function quote(text) {
  return h("q", { class: "reason" }, text ?? "—");
}

// A human judge's reject reason as the steering parser read it: what the rest of the loop honours.
function readingNote(reading) {
  if (!reading) return null;
  const update = reading.update ?? {};
  const parts = [];
  for (const [side, word] of [["positive", "wants"], ["negative", "avoids"], ["lift", "lifts"]]) {
    const s = update[side] ?? {};
    const bits = [...(s.genres ?? [])];
    if (s.year_range) bits.push(`${s.year_range.start ?? "…"}–${s.year_range.end ?? "…"}`);
    for (const i of s.items ?? []) bits.push(`#${i}`);
    for (const p of s.soft ?? []) bits.push(`like “${p.text}”`);
    if (bits.length) parts.push(`${word} ${bits.join(", ")}`);
  }
  const read = parts.length ? parts.join("; ") : "nothing to apply";
  const unsure = (reading.unparsed ?? []).length ? ` (not understood: ${reading.unparsed.join("; ")})` : "";
  return h("div", { class: "muted reading" }, `read by ${reading.parser}: ${read}${unsure}`);
}

function roundsTable(rounds) {
  const extraKeys = [...new Set(rounds.flatMap((r) => Object.keys(r).filter((k) => !ROUND_COLUMNS.has(k))))];
  const headers = [
    "Round",
    "Item",
    "Rec agent's reason",
    "Reward score",
    "Rank",
    "Decision",
    "User agent's reason",
    "Fallbacks",
    "LLM",
  ];
  if (extraKeys.length) headers.push("More");
  const more = (r) =>
    definitionList(
      extraKeys.filter((k) => k in r).map((k) => [label(k), r[k]]),
      { class: "compact" },
    );
  return table(
    headers,
    rounds.map((r) => ({
      props: { class: r.decision === "accept" ? "accepted" : null },
      cells: [
        String(r.round),
        [itemLink(r.item, r.item_title), h("span", { class: "muted" }, ` #${r.item}`)],
        quote(r.rec_reason),
        formatNumber(r.reward_score),
        formatNumber(r.reward_rank),
        decisionBadge(r.decision),
        [quote(r.user_reason), readingNote(r.reason_reading)],
        fallbackText(r),
        roundUsage(r),
        ...(extraKeys.length ? [more(r)] : []),
      ],
    })),
    { class: "rounds", stack: true },
  );
}

// --- candidates -------------------------------------------------------------------------------

function marks(c) {
  return [
    ...c.proposed_in.map((round) => badge(`round ${round}'s proposal`, "info")),
    c.final ? badge("answer", "ok") : null,
    c.consumed_later ? badge("true item (consumed later)", "true") : null,
  ];
}

/** A loop's candidates as the agents saw them, with both models' scores and ranks; the rows the
 * rounds proposed, the answer and the true item (where the user consumed it later) are marked. */
export function candidatesTable(found) {
  return table(
    ["#", "Item", "Rec score", "Rec rank", "Reward score", "Reward rank", "Marks"],
    found.data.map((c) => ({
      props: {
        class: [c.proposed_in.length && "proposed", c.final && "final", c.consumed_later && "true-item"],
        dataset: { item: String(c.item) },
      },
      cells: [
        String(c.position),
        [itemLink(c.item, c.title), h("span", { class: "muted" }, ` #${c.item}`)],
        formatNumber(c.rec_score),
        String(c.rec_rank),
        formatNumber(c.reward_score),
        String(c.reward_rank),
        marks(c),
      ],
    })),
    { class: "candidates", stack: true },
  );
}

/** The candidates of a loop, fetched when first shown (they live in the loop's checkpoint). */
function candidatesSection(sessionId, loop) {
  const body = h("div", { class: "candidates-body" });
  const section = h(
    "details",
    { class: "loop-candidates" },
    h("summary", null, "Candidates with both models' scores and ranks"),
    body,
  );
  let loaded = false;
  const load = async () => {
    if (loaded) return;
    loaded = true;
    fill(body, h("p", { class: "loading" }, "Loading…"));
    try {
      const found = await get(`/v1/sessions/${sessionId}/loops/${loop.loop_index}/candidates`);
      const rounds = found.proposals.map((item, i) => `round ${i + 1}: #${item}`).join(" · ");
      fill(body, h("p", { class: "muted" }, `Proposals: ${rounds || "none yet"}.`), candidatesTable(found));
    } catch (error) {
      loaded = false;
      fill(body, h("p", { class: "error-text" }, error?.readable ?? String(error?.message ?? error)));
    }
  };
  section.addEventListener("toggle", () => section.open && load());
  return { element: section, load, open: () => ((section.open = true), load()) };
}

export function loopDetails(loop, sessionId = null, { open = false } = {}) {
  const rounds = loop.rounds ?? [];
  const last = rounds[rounds.length - 1];
  const finalTitle = last && last.item === loop.final_item ? last.item_title : null;
  const outcome =
    loop.status === "completed"
      ? `${loop.stop_reason === "accepted" ? "accepted" : (loop.stop_reason ?? "done").replaceAll("_", " ")} after ${rounds.length} round${rounds.length === 1 ? "" : "s"}`
      : `${loop.status.replaceAll("_", " ")}, ${rounds.length} round${rounds.length === 1 ? "" : "s"} so far`;
  const params = loop.params ?? {};
  const extra = Object.keys(loop).filter((k) => !LOOP_FIELDS_SHOWN.has(k));
  const candidates = sessionId ? candidatesSection(sessionId, loop) : null;
  const details = h(
    "details",
    { class: "loop", dataset: { loopIndex: loop.loop_index } },
    h(
      "summary",
      null,
      h("strong", null, `Loop ${loop.loop_index}`),
      " · ",
      outcome,
      finalTitle ? [" · ", h("span", { class: "final-title" }, finalTitle)] : null,
      h("span", { class: "muted" }, ` · ${formatTime(loop.started_at)}`),
    ),
    definitionList([
      ["Status", loop.status],
      ["Stop reason", loop.stop_reason],
      [
        "Final item",
        loop.final_item === null || loop.final_item === undefined
          ? "—"
          : itemLink(loop.final_item, finalTitle),
      ],
      ["Final reason", loop.final_reason === null ? "—" : quote(loop.final_reason)],
      ["Started", formatTime(loop.started_at)],
      ["Finished", formatTime(loop.finished_at)],
      ["Duration", formatDuration(loop.duration_ms)],
      ["Agents", params.agents],
      ["Judge", params.judge_mode],
      ["Round limit", params.max_rounds],
      [
        "Candidates",
        Array.isArray(params.candidates)
          ? `${params.candidates.length}: ${params.candidates.join(", ")}`
          : params.candidates,
      ],
      ["LLM usage", usageText(usageOf(loop))],
      ...extra.map((k) => [label(k), loop[k]]),
    ]),
    rounds.length ? roundsTable(rounds) : h("p", { class: "muted" }, "No finished round yet."),
    candidates?.element,
  );
  if (open) {
    details.open = true;
    candidates?.open();
  }
  return details;
}

/** Two loops side by side (one column each on a wide screen, one after the other on a narrow one). */
export function loopComparison(sessionId, loops, first, second) {
  const byIndex = new Map(loops.map((l) => [String(l.loop_index), l]));
  const column = (index) => {
    const loop = byIndex.get(String(index));
    return h(
      "div",
      { class: "compare-column", dataset: { loopIndex: String(index) } },
      loop ? loopDetails(loop, sessionId, { open: true }) : h("p", { class: "muted" }, `No loop ${index} loaded.`),
    );
  };
  return h("div", { class: "compare" }, column(first), column(second));
}

// --- live loop --------------------------------------------------------------------------------

/** What an agent's step adds beside its answer: its fallback and cause, its LLM usage. */
function stepNote(step) {
  const notes = [];
  if (step.fallback) notes.push(`fell back${step.fallback_cause ? `: ${step.fallback_cause}` : ""}`);
  if (step.usage?.calls) notes.push(usageText(step.usage));
  return notes.length ? h("span", { class: "muted" }, ` (${notes.join("; ")})`) : null;
}

function liveEntry(node, update) {
  const entry = h("li", { dataset: { node } }, h("span", { class: "node" }, node));
  const body = h("span", { class: "live-text" });
  append(entry, " ", body);
  if (node === "recommend" && update?.proposal) {
    const { item: id, reason } = update.proposal;
    append(body, `proposes #${id}: `, quote(reason), stepNote(update.proposal));
    item(id).then(
      (it) => body.prepend(`${it.title} — `),
      () => {},
    );
  } else if (node === "score" && update?.verdict) {
    append(body, `reward rank ${update.verdict.rank}, score ${formatNumber(update.verdict.score)}`);
  } else if (node === "judge" && update?.judgement) {
    const { decision, reason } = update.judgement;
    append(body, decisionBadge(decision), " ", quote(reason), stepNote(update.judgement));
  } else if (node === "memory_update") {
    const round = update?.rounds?.[0];
    append(
      body,
      round ? `round ${round.round} recorded` : "loop closed",
      update?.stop_reason ? ` (${update.stop_reason})` : "",
    );
  } else if (node === "__interrupt__") {
    append(body, "paused: the loop waits for your judgement");
  } else {
    append(body, update && typeof update === "object" ? Object.keys(update).map(label).join(", ") : "");
  }
  return entry;
}

/** Run a streamed request into `panel`, one line per node update as it arrives. */
export async function runLive(panel, path, body, onNode = null) {
  const state = h("p", { class: "live-state", role: "status" }, "Starting…");
  const log = h("ol", { class: "live-log", "aria-label": "Live updates" });
  fill(panel, state, log);
  panel.dataset.state = "running";
  try {
    const result = await stream(path, body, (name, data) => {
      if (name === "update" || name === "interrupt") {
        append(log, liveEntry(data.node, data.update));
        onNode?.(data.node === "__interrupt__" ? "judge" : data.node, "running");
        state.textContent = `Running… ${log.children.length} update${log.children.length === 1 ? "" : "s"}`;
      }
    });
    if (result.status === "completed") {
      fill(
        state,
        "Done: ",
        result.item ? itemLink(result.item.id, result.item.title) : "no item",
        ` (${(result.stop_reason ?? "").replaceAll("_", " ")} after ${result.rounds.length} round${result.rounds.length === 1 ? "" : "s"}, ${formatDuration(result.duration_ms)}`,
        result.usage?.calls ? `; LLM: ${usageText(result.usage)}` : "",
        ")",
      );
    } else {
      state.textContent = "Paused: the loop waits for a judgement.";
    }
    panel.dataset.state = result.status;
    onNode?.(result.status === "completed" ? "__end__" : "judge", result.status === "completed" ? "done" : "waiting");
    return result;
  } catch (error) {
    panel.dataset.state = "failed";
    onNode?.(null, "failed");
    // Refused before it started (409, 422...): the caller shows why; nothing ran, so no log.
    if (!log.children.length) clear(panel);
    else state.textContent = "Stopped before the loop's result arrived.";
    throw error;
  }
}
