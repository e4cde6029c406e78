// The loop graph, drawn here in plain SVG from the nodes and edges the compiled graph reports
// (GET /v1/graph): nothing is fetched from elsewhere and no diagram library runs. During a live
// run the node that just ran is marked; a session's checkpoints are listed step by step.

import { get } from "../api.js";
import { fill, formatNumber, formatTime, h, svg, table } from "../dom.js";

const NODE_W = 150;
const NODE_H = 30;
const GAP = 24;
const MARGIN = 10;
const BEND = 46; // how far an edge that skips or returns bows out beside the column
const END_NAMES = { __start__: "start", __end__: "end" };

let drawing = null; // the graph does not change while the page is open: fetched once

export async function loopGraph() {
  drawing ??= await get("/v1/graph");
  return drawing;
}

/** The graph as an <svg>: nodes top to bottom in the graph's order; an edge to the next node is a
 * straight arrow, one that returns (the next round) bows out to the right, one that skips to the
 * left; conditional edges are dashed. `markNode(element, name)` marks the current node. */
export function graphDiagram(graph) {
  const index = new Map(graph.nodes.map((name, i) => [name, i]));
  const width = NODE_W + 2 * (BEND + MARGIN);
  const x = BEND + MARGIN;
  const top = (i) => MARGIN + i * (NODE_H + GAP);
  const height = top(graph.nodes.length) - GAP + MARGIN;
  const centre = x + NODE_W / 2;
  const edges = graph.edges.map((edge) => {
    const from = index.get(edge.source);
    const to = index.get(edge.target);
    let d;
    if (to === from + 1) {
      d = `M ${centre} ${top(from) + NODE_H} L ${centre} ${top(to) - 2}`;
    } else {
      const side = to < from ? x + NODE_W : x;
      const out = to < from ? BEND : -BEND;
      const y1 = top(from) + NODE_H / 2;
      const y2 = top(to) + NODE_H / 2;
      d = `M ${side} ${y1} C ${side + out} ${y1}, ${side + out} ${y2}, ${side + (to < from ? 2 : -2)} ${y2}`;
    }
    return svg(
      "path",
      {
        d,
        class: ["edge", edge.conditional && "conditional"],
        "marker-end": "url(#arrow)",
        dataset: { source: edge.source, target: edge.target },
      },
      svg("title", null, `${edge.source} → ${edge.target}${edge.conditional ? " (routed)" : ""}`),
    );
  });
  const nodes = graph.nodes.map((name, i) =>
    svg(
      "g",
      { class: ["node", name in END_NAMES && "terminal"], dataset: { node: name } },
      svg("rect", { x, y: top(i), width: NODE_W, height: NODE_H, rx: name in END_NAMES ? 15 : 4 }),
      svg("text", { x: centre, y: top(i) + NODE_H / 2, "text-anchor": "middle", "dominant-baseline": "central" }, END_NAMES[name] ?? name),
    ),
  );
  return svg(
    "svg",
    {
      class: "loop-graph",
      viewBox: `0 0 ${width} ${height}`,
      width,
      height,
      role: "img",
      "aria-label": `The loop graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges`,
    },
    svg(
      "defs",
      null,
      svg(
        "marker",
        { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }),
      ),
    ),
    edges,
    nodes,
  );
}

/** Mark `name` as the node that ran last (null clears the mark). */
export function markNode(diagram, name) {
  for (const node of diagram.querySelectorAll("g.node")) {
    node.classList.toggle("current", node.dataset.node === name);
  }
}

/** The graph card: the diagram, a line saying which node ran last, and its Mermaid text. */
export function graphCard(graph) {
  const diagram = graphDiagram(graph);
  const status = h("p", { class: "graph-status muted", role: "status" }, "Idle: no loop running.");
  const card = h(
    "section",
    { class: "card graph-card", id: "section-graph", "aria-labelledby": "graph-title" },
    h("h2", { id: "graph-title" }, "The loop graph"),
    diagram,
    status,
    h("details", null, h("summary", null, "Mermaid text"), h("pre", { class: "mermaid-text" }, graph.mermaid)),
  );
  return {
    element: card,
    /** phase: "running" (name just ran), "waiting" (paused at name), "done" or "failed". */
    mark(name, phase) {
      const live = phase === "running" || phase === "waiting";
      markNode(diagram, live ? name : null);
      status.textContent = {
        running: `Running: ${name} just ran.`,
        waiting: `Paused at ${name}: waiting for a judgement.`,
        done: "Finished: the loop reached the end.",
        failed: "Stopped before the loop finished.",
      }[phase];
      card.dataset.current = live ? name : "";
      card.dataset.phase = phase;
    },
  };
}

// --- checkpoints ------------------------------------------------------------------------------

function orDash(value) {
  return value === null || value === undefined ? "—" : formatNumber(value);
}

/** A session's checkpoints, newest first: one row per checkpoint with the state's key fields. */
export function checkpointsTable(checkpoints) {
  if (!checkpoints.length) return h("p", { class: "muted" }, "No checkpoint yet: run a recommendation.");
  return table(
    ["Step", "Source", "Node", "Next", "Loop", "Round", "Proposal", "Reward rank", "Decision", "Answer", "Stop reason", "Memory (rec / user)", "Time"],
    checkpoints.map((c) => ({
      props: { dataset: { checkpoint: c.checkpoint_id, step: String(c.step) } },
      cells: [
        String(c.step),
        c.source,
        c.nodes.length ? c.nodes.join(", ") : "—",
        c.next.length ? c.next.join(", ") : "— (ended)",
        orDash(c.state.loop_index),
        orDash(c.state.round),
        orDash(c.state.proposal_item),
        orDash(c.state.reward_rank),
        c.state.decision ?? "—",
        orDash(c.state.final_item),
        c.state.stop_reason ? c.state.stop_reason.replaceAll("_", " ") : "—",
        `${c.state.rec_memory ?? 0} / ${c.state.user_memory ?? 0}`,
        formatTime(c.created_at),
      ],
    })),
    { class: "checkpoints", stack: true },
  );
}

export async function drawCheckpoints(container, sessionId, limit = 50) {
  const page = await get(`/v1/sessions/${sessionId}/checkpoints`, { limit });
  fill(
    container,
    h("p", { class: "muted" }, `The newest ${page.count} checkpoint${page.count === 1 ? "" : "s"} of the session's thread, newest first.`),
    checkpointsTable(page.data),
  );
}
