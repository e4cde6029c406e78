// A small Markdown renderer for evaluation reports (report.md), building DOM nodes directly.
// It knows what the reports use: headings, paragraphs, pipe tables, lists, block quotes, code,
// rules, and inline code, bold, emphasis, links and images. Raw HTML is not a thing here: a
// "<script>" in a report is text like any other, because nothing is ever parsed as HTML.
// Links open only for http(s); images come from resolveImage(src), which returns an element
// (or null to show the alt text), so the caller decides which files may be shown.

import { append, h } from "./dom.js";

const FENCE = /^ {0,3}(```|~~~)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])( *\1){2,} *$/;
const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const TABLE_DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const INLINE =
  /\\([\\`*_{}[\]()#+\-.!|<>~])|(`+)([\s\S]*?[^`])\2(?!`)|!\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|\*\*(?=\S)([\s\S]*?\S)\*\*|(?<!\w)__(?=\S)([\s\S]*?\S)__(?!\w)|\*(?=[^\s*])([\s\S]*?[^\s*])\*|\b_(?=[^\s_])([\s\S]*?[^\s_])_\b/g;

/** Markdown text -> a DocumentFragment. Headings are shifted down by `headingOffset` levels. */
export function renderMarkdown(text, { resolveImage = () => null, headingOffset = 0 } = {}) {
  const context = { resolveImage, headingOffset };
  const fragment = document.createDocumentFragment();
  append(fragment, blocks(String(text).replaceAll("\r\n", "\n").split("\n"), context));
  return fragment;
}

function startsBlock(line, next) {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    LIST_ITEM.test(line) ||
    QUOTE.test(line) ||
    (line.includes("|") && next !== undefined && TABLE_DELIMITER.test(next))
  );
}

function blocks(lines, context) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const fence = line.match(FENCE);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) code.push(lines[i++]);
      i += 1; // the closing fence (or the end)
      out.push(h("pre", null, h("code", null, code.join("\n"))));
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      const level = Math.min(6, heading[1].length + context.headingOffset);
      out.push(h(`h${level}`, null, inline(heading[2], context)));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h("hr"));
      i += 1;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_DELIMITER.test(lines[i + 1])) {
      const rows = [line, lines[i + 1]];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(lines[i++]);
      out.push(tableBlock(rows, context));
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(lines[i++].match(QUOTE)[1]);
      out.push(h("blockquote", null, blocks(quoted, context)));
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const ordered = /\d/.test(line.match(LIST_ITEM)[2]);
      const items = [];
      while (i < lines.length && lines[i].trim()) {
        const item = lines[i].match(LIST_ITEM);
        if (item) items.push(item[3]);
        else items[items.length - 1] += ` ${lines[i].trim()}`; // a wrapped item's next line
        i += 1;
      }
      out.push(
        h(
          ordered ? "ol" : "ul",
          null,
          items.map((item) => h("li", null, inline(item, context))),
        ),
      );
      continue;
    }
    const paragraph = [line.trim()];
    i += 1;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i], lines[i + 1])) {
      paragraph.push(lines[i++].trim());
    }
    out.push(h("p", null, inline(paragraph.join(" "), context)));
  }
  return out;
}

function splitRow(row) {
  const cells = [];
  let cell = "";
  const text = row.trim().replace(/^\|/, "");
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === "\\" && text[i + 1] === "|") {
      cell += "\\|"; // kept escaped: inline() turns it into a literal bar
      i += 1;
    } else if (text[i] === "|") {
      cells.push(cell.trim());
      cell = "";
    } else {
      cell += text[i];
    }
  }
  if (cell.trim()) cells.push(cell.trim());
  return cells;
}

function tableBlock(rows, context) {
  const headers = splitRow(rows[0]);
  const aligns = splitRow(rows[1]).map((spec) =>
    spec.startsWith(":") && spec.endsWith(":") ? "center" : spec.endsWith(":") ? "right" : null,
  );
  // The reports put the published numbers in columns headed "paper ...": marked so they stand out.
  const paper = headers.map((name) => /^paper\b/i.test(name));
  const cellProps = (index) => ({
    class: [aligns[index] && `align-${aligns[index]}`, paper[index] && "paper-column"],
  });
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "report-table" },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          headers.map((name, c) => h("th", { scope: "col", ...cellProps(c) }, inline(name, context))),
        ),
      ),
      h(
        "tbody",
        null,
        rows.slice(2).map((row) =>
          h(
            "tr",
            null,
            headers.map((_, c) => h("td", cellProps(c), inline(splitRow(row)[c] ?? "", context))),
          ),
        ),
      ),
    ),
  );
}

function safeLink(href) {
  try {
    const url = new URL(href, "http://relative.invalid/");
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

function inline(text, context) {
  const out = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    last = match.index + match[0].length;
    const [, escaped, , code, alt, src, linkText, href, strong1, strong2, em1, em2] = match;
    if (escaped !== undefined) out.push(escaped);
    else if (code !== undefined) out.push(h("code", null, code.trim()));
    else if (src !== undefined)
      out.push(
        context.resolveImage(src, alt) ?? h("span", { class: "missing-image" }, `[image: ${alt || src}]`),
      );
    else if (href !== undefined) {
      const target = safeLink(href);
      // Relative links point into the run directory, which a browser cannot open without the key.
      out.push(
        target && !target.startsWith("http://relative.invalid/")
          ? h("a", { href: target, rel: "noopener noreferrer", target: "_blank" }, inline(linkText, context))
          : h("span", { class: "link-text" }, inline(linkText, context)),
      );
    } else if ((strong1 ?? strong2) !== undefined)
      out.push(h("strong", null, inline(strong1 ?? strong2, context)));
    else out.push(h("em", null, inline(em1 ?? em2, context)));
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
