// One session: what it is, its loops round by round, the charts, and what can be done with it
// (run a loop and watch it live, judge as the human, steer, record consumption, delete).

import { get } from "../api.js";
import { rankChart, roundsChart } from "../chart.js";
import { append, definitionList, field, fill, formatTime, h, label, spinner, table } from "../dom.js";
import { attributesSummary, itemLink, itemsById } from "./catalog.js";
import { drawCheckpoints, graphCard, loopGraph } from "./graph.js";
import { loopComparison, loopDetails, quote, runLive, usageText } from "./loops.js";
import { consumeForm, deleteSection, formStatus, say, steerForm } from "./session_forms.js";
import { statusBadge } from "./sessions.js";
import { describeSide, parserText, preferencesList } from "./steering.js";

const LOOPS_PER_PAGE = 20;
const HISTORY_SHOWN = 50;
const COMMANDS_SHOWN = 50;
const SHOWN_ELSEWHERE = new Set([
  "history",
  "rec_memory",
  "user_memory",
  "pending",
  "id",
  "thread_id",
  "user_id",
  "status",
]);

// --- the page ---------------------------------------------------------------------------------

export async function sessionView(page, ctx, sessionId) {
  const base = `/v1/sessions/${sessionId}`;
  const header = h("section", { class: "session-header", "aria-label": "Session" }, spinner());
  const pending = h("section", { class: "pending-slot" });
  const charts = h("div", { class: "charts" });
  const loopsList = h("div", { class: "loops" });
  const loopsMore = h("div");
  const history = h("div");
  const memory = h("div");
  const preferences = h("div");
  const commands = h("div");
  const checkpoints = h("div");
  const compare = h("div", { class: "compare-slot" });
  const compareForm = h("form", { class: "compare-form" });
  let graph = null;
  let session = null;
  let loops = [];
  let loopsCount = 0;

  const runPanel = h("div", { class: "live", "aria-live": "polite" });
  const graphSlot = h("div", { class: "graph-slot" });
  const feedbackPanel = h("div", { class: "live", "aria-live": "polite" });

  async function refresh() {
    const [state, loopPage, prefs, commandPage] = await Promise.all([
      get(base),
      get(`${base}/loops`, { limit: LOOPS_PER_PAGE }),
      get(`${base}/preferences`),
      get(`${base}/commands`, { limit: COMMANDS_SHOWN }),
    ]);
    if (!ctx.isCurrent()) return;
    session = state;
    loops = loopPage.data;
    loopsCount = loopPage.count;
    drawHeader();
    drawPending();
    drawLoops();
    drawMemory();
    fill(preferences, preferencesList(prefs));
    let commandRows = commandPage.data;
    if (commandPage.count > COMMANDS_SHOWN) {
      commandRows = (
        await get(`${base}/commands`, { limit: COMMANDS_SHOWN, offset: commandPage.count - COMMANDS_SHOWN })
      ).data;
    }
    drawCommands(commandRows, commandPage.count);
    drawCompareForm();
    await Promise.all([drawHistory(), drawCheckpoints(checkpoints, sessionId).catch(showError(checkpoints))]);
  }

  const showError = (container) => (error) =>
    fill(container, h("p", { class: "error-text" }, ctx.describeError(error)));

  function drawHeader() {
    const extra = Object.keys(session).filter(
      (k) => !SHOWN_ELSEWHERE.has(k) && !["dataset", "n_loops", "created_at", "updated_at"].includes(k),
    );
    fill(
      header,
      h(
        "p",
        { class: "breadcrumb" },
        h("a", { href: "#/sessions" }, "Sessions"),
        " / ",
        h("code", null, session.id),
      ),
      h("h1", null, "Session of ", h("span", { class: "user-id" }, session.user_id)),
      definitionList([
        ["Status", statusBadge(session.status)],
        ["Dataset", session.dataset],
        ["Loops", String(session.n_loops)],
        ["Created", formatTime(session.created_at)],
        ["Last activity", formatTime(session.updated_at)],
        ...extra.map((k) => (k === "usage" ? ["LLM usage", usageText(session[k])] : [label(k), session[k]])),
      ]),
      h(
        "nav",
        { class: "jump", "aria-label": "On this page" },
        ["run", "steer", "consume", "loops", "compare", "checkpoints", "history"].map((id) =>
          h("a", { href: `#/sessions/${session.id}`, dataset: { jump: id } }, label(id)),
        ),
      ),
    );
    for (const link of header.querySelectorAll("[data-jump]")) {
      link.addEventListener("click", (event) => {
        event.preventDefault(); // the hash is the route: scroll instead of navigating
        const target = page.querySelector(`#section-${link.dataset.jump}`);
        target?.scrollIntoView();
        target?.querySelector("input, select, textarea, button, summary")?.focus({ preventScroll: true });
      });
    }
  }

  function drawPending() {
    const proposal = session.pending;
    if (!proposal) {
      pending.replaceChildren();
      return;
    }
    const reason = h("textarea", { name: "reason", required: true, maxlength: 2000, rows: 3 });
    const accept = h("input", {
      type: "radio",
      name: "decision",
      value: "accept",
      id: "decision-accept",
      checked: true,
    });
    const reject = h("input", { type: "radio", name: "decision", value: "reject", id: "decision-reject" });
    const status = formStatus();
    const form = h(
      "form",
      { class: "judge-form" },
      h(
        "fieldset",
        null,
        h("legend", null, "Your decision"),
        h("span", { class: "radio" }, accept, h("label", { for: accept.id }, "Accept")),
        h("span", { class: "radio" }, reject, h("label", { for: reject.id }, "Reject")),
      ),
      field("Why", reason, "In the user's words; the agents remember it."),
      h("button", { type: "submit" }, "Send judgement"),
      status,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!reason.value.trim()) {
        say(status, "Give a reason: the agents learn from it.", "error");
        reason.focus();
        return;
      }
      say(status, "Sending…");
      try {
        const decision = accept.checked ? "accept" : "reject";
        await runLive(feedbackPanel, `${base}/feedback`, { decision, reason: reason.value }, graph?.mark);
        say(status, "");
        await refresh();
      } catch (error) {
        say(status, ctx.describeError(error), "error");
      }
    });
    fill(
      pending,
      h(
        "div",
        { class: "card pending", id: "section-judge" },
        h(
          "h2",
          null,
          `Loop ${proposal.loop_index ?? "?"}, round ${proposal.round ?? "?"} awaits your judgement`,
        ),
        definitionList([
          [
            "Proposed item",
            proposal.item === undefined
              ? "—"
              : h(
                  "span",
                  null,
                  itemLink(proposal.item, proposal.item_title),
                  h("span", { class: "muted" }, ` #${proposal.item}`),
                ),
          ],
          ["Rec agent's reason", quote(proposal.rec_reason)],
          ["Reward rank", proposal.reward_rank],
          ["Reward score", proposal.reward_score],
        ]),
        form,
        feedbackPanel,
      ),
    );
  }

  function drawLoops() {
    const chronological = [...loops].reverse();
    fill(
      charts,
      rankChart(chronological),
      roundsChart(chronological),
      loopsCount > loops.length
        ? h("p", { class: "muted" }, `Charts show the newest ${loops.length} of ${loopsCount} loops.`)
        : null,
    );
    fill(
      loopsList,
      ...(loops.length
        ? loops.map((loop) => loopDetails(loop, sessionId))
        : [h("p", { class: "muted" }, "No loop yet: run a recommendation.")]),
    );
    if (loops.length < loopsCount) {
      const more = h(
        "button",
        { type: "button", class: "secondary" },
        `Show older loops (${loopsCount - loops.length} more)`,
      );
      more.addEventListener("click", async () => {
        more.disabled = true;
        try {
          const next = await get(`${base}/loops`, { limit: LOOPS_PER_PAGE, offset: loops.length });
          loops = [...loops, ...next.data];
          loopsCount = next.count;
          drawLoops();
        } catch (error) {
          more.disabled = false;
          ctx.notify(ctx.describeError(error));
        }
      });
      fill(loopsMore, more);
    } else {
      loopsMore.replaceChildren();
    }
  }

  async function drawHistory() {
    const all = session.history;
    let shown = all.slice(-HISTORY_SHOWN);
    const draw = async () => {
      const known = await itemsById(shown);
      const offset = all.length - shown.length;
      const rows = shown.map((id, index) => {
        const it = known.get(id);
        return [
          String(offset + index + 1),
          itemLink(id, it?.title),
          it ? attributesSummary(it.attributes) : "—",
        ];
      });
      const showAll =
        shown.length < all.length
          ? h(
              "button",
              { type: "button", class: "secondary", onClick: () => ((shown = all), draw()) },
              `Show all ${all.length} items`,
            )
          : null;
      fill(
        history,
        h("p", { class: "muted" }, `${all.length} item${all.length === 1 ? "" : "s"}, oldest first.`),
        table(["#", "Title", "Attributes"], rows, { class: "history" }),
        showAll,
      );
    };
    await draw();
  }

  function drawCompareForm() {
    if (loops.length < 2) {
      fill(compareForm, h("p", { class: "muted" }, "Two loops are needed to compare them."));
      compare.replaceChildren();
      return;
    }
    const choice = (name, selected) =>
      h(
        "select",
        { name },
        loops.map((l) =>
          h("option", { value: String(l.loop_index), selected: l.loop_index === selected }, `Loop ${l.loop_index}`),
        ),
      );
    const first = choice("first", loops[1].loop_index);
    const second = choice("second", loops[0].loop_index);
    fill(
      compareForm,
      h("div", { class: "field-row" }, field("Left", first), field("Right", second)),
      h("button", { type: "submit" }, "Compare"),
    );
    compareForm.onsubmit = (event) => {
      event.preventDefault();
      fill(compare, loopComparison(sessionId, loops, Number(first.value), Number(second.value)));
    };
  }

  function drawMemory() {
    const entries = (list) =>
      list.length
        ? table(
            ["Item", "Rec agent's reason", "User's reason"],
            list.map((m) => [itemLink(m.item, m.item_title), quote(m.rec_reason), quote(m.user_reason)]),
          )
        : h("p", { class: "muted" }, "Nothing yet.");
    fill(
      memory,
      h("h3", null, `Recommendation agent (${session.rec_memory.length})`),
      entries(session.rec_memory),
      h("h3", null, `User agent (${session.user_memory.length})`),
      entries(session.user_memory),
    );
  }

  function drawCommands(rows, count) {
    if (!rows.length) {
      fill(commands, h("p", { class: "muted" }, "No command yet."));
      return;
    }
    fill(
      commands,
      count > rows.length ? h("p", { class: "muted" }, `The newest ${rows.length} of ${count}.`) : null,
      table(
        ["When", "Command", "Parser", "Understood", "Not understood", "Preferences after"],
        [...rows]
          .reverse()
          .map((c) => [
            formatTime(c.created_at),
            c.kind === "reset" ? h("em", null, "reset") : h("span", { class: "command-text" }, c.text ?? ""),
            parserText(c),
            c.understood ? "yes" : "no",
            c.unparsed?.length ? c.unparsed.join("; ") : "—",
            `wants: ${describeSide(c.preferences?.positive)} · avoids: ${describeSide(c.preferences?.negative)}`,
          ]),
        { class: "commands cards", stack: true },
      ),
    );
  }

  // --- actions ---

  function runForm() {
    const maxRounds = h("input", {
      type: "number",
      name: "max_rounds",
      min: 1,
      max: 20,
      placeholder: "default",
      inputmode: "numeric",
    });
    const judge = h(
      "select",
      { name: "judge_mode" },
      h("option", { value: "agent" }, "the user agent"),
      h("option", { value: "human" }, "me (human judge)"),
    );
    const agents = h(
      "select",
      { name: "agents" },
      h("option", { value: "offline" }, "offline (deterministic)"),
      h("option", { value: "llm" }, "LLM"),
    );
    const candidates = h("input", {
      name: "candidates",
      autocomplete: "off",
      placeholder: "default: the rec model's top items",
    });
    const status = formStatus();
    const submit = h("button", { type: "submit" }, "Run recommendation");
    const form = h(
      "form",
      { class: "card run-form", id: "section-run" },
      h("h2", null, "Run a recommendation"),
      h(
        "div",
        { class: "field-row" },
        field("Round limit", maxRounds),
        field("Judged by", judge),
        field("Agents", agents),
      ),
      field("Candidates (item ids)", candidates, "Optional; separated by spaces or commas."),
      submit,
      status,
      runPanel,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = { judge_mode: judge.value, agents: agents.value };
      if (maxRounds.value) body.max_rounds = Number(maxRounds.value);
      const ids = candidates.value.split(/[\s,]+/).filter(Boolean);
      if (ids.some((v) => !/^\d+$/.test(v))) {
        say(status, "Candidates are item ids: whole numbers separated by spaces or commas.", "error");
        return;
      }
      if (ids.length) body.candidates = ids.map(Number);
      submit.disabled = true;
      say(status, "");
      try {
        const result = await runLive(runPanel, `${base}/recommendations`, body, graph?.mark);
        if (result.status !== "completed") say(status, "Your turn: judge the proposal above.", "ok");
        await refresh();
        if (result.status !== "completed") page.querySelector("#section-judge textarea")?.focus();
      } catch (error) {
        say(status, ctx.describeError(error), "error");
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  }

  // Actions side by side, the loops at full width (their rounds table is wide), then the rest.
  append(
    page,
    header,
    pending,
    h(
      "div",
      { class: "columns" },
      h("div", { class: "main-column" }, runForm(), graphSlot),
      h("div", { class: "side-column" }, steerForm({ base, ctx, refresh, preferences, commands })),
    ),
    h(
      "section",
      { id: "section-loops", "aria-labelledby": "loops-title" },
      h("h2", { id: "loops-title" }, "Loops, newest first"),
      charts,
      loopsList,
      loopsMore,
    ),
    h(
      "section",
      { class: "card", id: "section-compare", "aria-labelledby": "compare-title" },
      h("h2", { id: "compare-title" }, "Two loops side by side"),
      compareForm,
      compare,
    ),
    h(
      "section",
      { class: "card", id: "section-checkpoints", "aria-labelledby": "checkpoints-title" },
      h("h2", { id: "checkpoints-title" }, "Checkpoints"),
      checkpoints,
    ),
    h(
      "div",
      { class: "columns" },
      h(
        "div",
        { class: "main-column" },
        h("section", { class: "card", id: "section-history" }, h("h2", null, "History"), history),
      ),
      h(
        "div",
        { class: "side-column" },
        consumeForm({ base, ctx, refresh }),
        h(
          "section",
          { class: "card memory" },
          h("details", null, h("summary", null, "What the agents remember"), memory),
        ),
        deleteSection({ base, ctx }),
      ),
    ),
  );
  try {
    const card = graphCard(await loopGraph());
    graph = card;
    fill(graphSlot, card.element);
  } catch (error) {
    fill(graphSlot, h("p", { class: "error-text" }, ctx.describeError(error)));
  }
  await refresh();
}
