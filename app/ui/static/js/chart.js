// Two small hand-drawn SVG charts of a session: the reward model's rank of each proposal, round by
// round, and how many rounds each loop took over time. Each has a text summary for screen readers
// and a <title> per mark (shown as a tooltip).

import { append, h, svg } from "./dom.js";

const WIDTH = 520;
const HEIGHT = 190;
const PAD = { left: 40, right: 12, top: 24, bottom: 34 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;

function frame(title, summary) {
  return svg(
    "svg",
    { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img", "aria-label": `${title}. ${summary}` },
    svg("title", null, title),
  );
}

function axes(chart, yTicks, yOf, yLabel, xLabel) {
  append(
    chart,
    svg("line", { x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: PAD.top + PLOT_H, class: "axis" }),
    svg("line", {
      x1: PAD.left,
      y1: PAD.top + PLOT_H,
      x2: PAD.left + PLOT_W,
      y2: PAD.top + PLOT_H,
      class: "axis",
    }),
    svg("text", { x: 4, y: PAD.top - 12, class: "axis-label" }, yLabel),
    svg("text", { x: PAD.left + PLOT_W, y: HEIGHT - 4, class: "axis-label", "text-anchor": "end" }, xLabel),
  );
  for (const tick of yTicks) {
    const y = yOf(tick);
    append(
      chart,
      svg("line", { x1: PAD.left, y1: y, x2: PAD.left + PLOT_W, y2: y, class: "grid" }),
      svg("text", { x: PAD.left - 6, y: y + 4, class: "tick", "text-anchor": "end" }, String(tick)),
    );
  }
}

function ticks(max, count = 4) {
  const step = Math.max(1, Math.ceil(max / count));
  const out = [];
  for (let t = 1; t <= max; t += step) out.push(t);
  if (out[out.length - 1] !== max) out.push(max);
  return out;
}

/** Reward rank of every round of `loops` (oldest loop first); rank 1 at the top. */
export function rankChart(loops) {
  const rounds = [];
  for (const loop of loops) {
    for (const round of loop.rounds ?? []) {
      if (typeof round.reward_rank === "number") rounds.push({ loop: loop.loop_index, ...round });
    }
  }
  const title = "Reward rank per round";
  if (!rounds.length) return h("p", { class: "muted" }, `${title}: no scored rounds yet.`);
  const accepted = rounds.filter((r) => r.decision === "accept").length;
  const chart = frame(
    title,
    `${rounds.length} rounds over ${loops.length} loops; ${accepted} accepted. Rank 1 is the reward model's favourite.`,
  );
  const maxRank = Math.max(5, ...rounds.map((r) => r.reward_rank));
  const yOf = (rank) => PAD.top + ((rank - 1) / Math.max(1, maxRank - 1)) * PLOT_H;
  const xOf = (index) =>
    PAD.left + 8 + (rounds.length === 1 ? (PLOT_W - 16) / 2 : (index / (rounds.length - 1)) * (PLOT_W - 16));
  axes(chart, ticks(maxRank), yOf, "rank", "rounds, oldest first");

  let previous = null;
  rounds.forEach((round, index) => {
    const x = xOf(index);
    const y = yOf(round.reward_rank);
    if (previous && previous.loop === round.loop) {
      append(chart, svg("line", { x1: previous.x, y1: previous.y, x2: x, y2: y, class: "series" }));
    } else if (previous) {
      const between = (previous.x + x) / 2; // a loop starts: a faint separator
      append(
        chart,
        svg("line", { x1: between, y1: PAD.top, x2: between, y2: PAD.top + PLOT_H, class: "separator" }),
      );
    }
    previous = { loop: round.loop, x, y };
  });
  rounds.forEach((round, index) => {
    const x = xOf(index);
    const y = yOf(round.reward_rank);
    const tooltip = svg(
      "title",
      null,
      `loop ${round.loop}, round ${round.round}: ${round.item_title ?? `item ${round.item}`}, rank ${round.reward_rank}, ${round.decision}`,
    );
    const mark =
      round.decision === "accept"
        ? svg("circle", { cx: x, cy: y, r: 5, class: "mark-accept" }, tooltip)
        : svg(
            "path",
            {
              d: `M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x - 4} ${y + 4}L${x + 4} ${y - 4}`,
              class: "mark-reject",
            },
            tooltip,
          );
    append(chart, mark);
  });
  return h(
    "figure",
    { class: "chart-figure" },
    chart,
    h(
      "figcaption",
      null,
      title,
      " — ",
      h("span", { class: "legend-accept" }, "● accepted"),
      " ",
      h("span", { class: "legend-reject" }, "✕ rejected"),
    ),
  );
}

/** Rounds per loop against the loop's start time. */
export function roundsChart(loops) {
  const points = loops
    .map((loop) => ({
      loop: loop.loop_index,
      time: Date.parse(loop.started_at),
      n: (loop.rounds ?? []).length,
      status: loop.status,
    }))
    .filter((p) => !Number.isNaN(p.time))
    .sort((a, b) => a.time - b.time);
  const title = "Rounds per loop over time";
  if (!points.length) return h("p", { class: "muted" }, `${title}: no loops yet.`);
  const chart = frame(
    title,
    `${points.length} loops; ${points.map((p) => `loop ${p.loop}: ${p.n} rounds`).join(", ")}.`,
  );
  const maxRounds = Math.max(1, ...points.map((p) => p.n));
  const first = points[0].time;
  const span = points[points.length - 1].time - first;
  const yOf = (n) => PAD.top + PLOT_H - (n / maxRounds) * PLOT_H;
  const xOf = (time) =>
    PAD.left + 8 + (span > 0 ? ((time - first) / span) * (PLOT_W - 16) : (PLOT_W - 16) / 2);
  axes(chart, ticks(maxRounds), yOf, "rounds", "loop start time");
  let previous = null;
  for (const point of points) {
    const x = xOf(point.time);
    const y = yOf(point.n);
    if (previous)
      append(chart, svg("line", { x1: previous.x, y1: previous.y, x2: x, y2: y, class: "series" }));
    previous = { x, y };
  }
  for (const point of points) {
    const x = xOf(point.time);
    const y = yOf(point.n);
    append(
      chart,
      svg("line", { x1: x, y1: PAD.top + PLOT_H, x2: x, y2: y, class: "stem" }),
      svg(
        "circle",
        { cx: x, cy: y, r: 4, class: point.status === "completed" ? "mark-loop" : "mark-open" },
        svg(
          "title",
          null,
          `loop ${point.loop}: ${point.n} rounds, started ${new Date(point.time).toLocaleString()} (${point.status})`,
        ),
      ),
    );
  }
  const when = (t) => new Date(t).toLocaleTimeString();
  append(
    chart,
    svg("text", { x: PAD.left, y: HEIGHT - 18, class: "tick" }, when(first)),
    span > 0
      ? svg(
          "text",
          { x: PAD.left + PLOT_W, y: HEIGHT - 18, class: "tick", "text-anchor": "end" },
          when(first + span),
        )
      : null,
  );
  return h("figure", { class: "chart-figure" }, chart, h("figcaption", null, title));
}
