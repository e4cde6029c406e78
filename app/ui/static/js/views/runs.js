// Evaluation runs (data_dir/runs): the list, and one run's report, plots and settings. Plots are
// fetched with the API key and shown from blob: URLs, released when the page is left.

import { blobUrl, get } from "../api.js";
import { append, badge, definitionList, fill, formatTime, h, spinner, table } from "../dom.js";
import { renderMarkdown } from "../markdown.js";

const RUNS_PER_PAGE = 50;

function runPath(name) {
  return `/v1/runs/${encodeURIComponent(name)}`;
}

function runLink(name) {
  return h("a", { href: `#/runs/${encodeURIComponent(name)}` }, name);
}

export async function runsView(page, ctx) {
  const offset = Number(ctx.query.get("offset") ?? 0);
  append(page, h("h1", null, "Evaluation runs"), spinner());
  const found = await get("/v1/runs", { limit: RUNS_PER_PAGE, offset });
  page.lastChild.remove();
  if (!found.count) {
    append(
      page,
      h(
        "p",
        null,
        "No run yet. `recloop eval table4 --dataset movielens` writes one under the data directory's runs/.",
      ),
    );
    return;
  }
  const to = (newOffset) => `#/runs?offset=${Math.max(0, newOffset)}`;
  append(
    page,
    h("p", { class: "count" }, `${found.count} run${found.count === 1 ? "" : "s"}, newest first.`),
    table(
      ["Run", "Experiment", "Dataset", "State", "Last written", "Plots"],
      found.data.map((run) => [
        runLink(run.name),
        run.experiment ?? "—",
        run.dataset ?? "—",
        run.finished ? badge("finished", "ok") : badge("unfinished", "wait"),
        formatTime(run.modified_at),
        String(run.plots.length),
      ]),
      { class: "runs" },
    ),
    found.count > RUNS_PER_PAGE
      ? h(
          "nav",
          { class: "pager", "aria-label": "Pages" },
          offset > 0 ? h("a", { href: to(offset - RUNS_PER_PAGE) }, "← Newer") : null,
          h("span", null, `${offset + 1}–${Math.min(offset + RUNS_PER_PAGE, found.count)} of ${found.count}`),
          offset + RUNS_PER_PAGE < found.count
            ? h("a", { href: to(offset + RUNS_PER_PAGE) }, "Older →")
            : null,
        )
      : null,
  );
}

function plotImage(runName, file, alt, urls) {
  const image = h("img", { alt: alt || file, class: "plot", loading: "lazy" });
  blobUrl(`${runPath(runName)}/files/${encodeURIComponent(file)}`).then(
    (url) => {
      urls.push(url);
      image.src = url;
    },
    (error) => image.replaceWith(h("span", { class: "error-text" }, `${file}: ${error.readable ?? error}`)),
  );
  return image;
}

export async function runView(page, ctx, name) {
  append(page, spinner());
  const run = await get(runPath(name));
  const urls = [];
  ctx.onLeave(() => urls.forEach((url) => URL.revokeObjectURL(url)));
  const plots = new Set(run.plots);
  const shownInReport = new Set();

  const report = run.report
    ? h(
        "div",
        { class: "report" },
        renderMarkdown(run.report, {
          headingOffset: 1,
          // Only the run's own plots, by plain file name: nothing else is fetched.
          resolveImage: (src, alt) => {
            if (!plots.has(src)) return null;
            shownInReport.add(src);
            return h("figure", null, plotImage(run.name, src, alt, urls), h("figcaption", null, alt || src));
          },
        }),
      )
    : h(
        "p",
        { class: "muted" },
        "This run has no report.md (yet): it may still be running, or was interrupted.",
      );
  const paperColumns = report.querySelector?.(".paper-column");
  const otherPlots = run.plots.filter((file) => !shownInReport.has(file));

  fill(
    page,
    h("p", { class: "breadcrumb" }, h("a", { href: "#/runs" }, "Evaluation runs"), " / ", run.name),
    h("h1", null, run.name),
    definitionList([
      ["Experiment", run.experiment ?? "—"],
      ["Dataset", run.dataset ?? "—"],
      ["State", run.finished ? "finished" : "unfinished"],
      ["Finished at", run.finished_at ? formatTime(run.finished_at) : "—"],
      ["Code version", run.code_version ?? "—"],
      ["Files", run.files.map((f) => `${f.name} (${(f.size / 1024).toFixed(1)} KiB)`).join(", ") || "—"],
    ]),
    h(
      "section",
      { class: "card", "aria-labelledby": "report-title" },
      h("h2", { id: "report-title" }, "Report"),
      paperColumns
        ? h(
            "p",
            { class: "paper-note" },
            "Highlighted columns headed “paper” hold the published numbers (AFL/FLOW, arXiv 2410.20027) beside this run's.",
          )
        : null,
      report,
    ),
    otherPlots.length
      ? h(
          "section",
          { class: "card", "aria-labelledby": "plots-title" },
          h("h2", { id: "plots-title" }, "Plots"),
          otherPlots.map((file) =>
            h("figure", null, plotImage(run.name, file, file, urls), h("figcaption", null, file)),
          ),
        )
      : null,
    h(
      "section",
      { class: "card", "aria-labelledby": "settings-title" },
      h("h2", { id: "settings-title" }, "Settings (config.json)"),
      run.config
        ? definitionList(Object.entries(run.config).map(([key, value]) => [key, value]))
        : h("p", { class: "muted" }, "No config.json."),
    ),
  );
}
