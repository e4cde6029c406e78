// Steering preferences ({positive, negative} sides of genres, years, items and soft wishes) in words.

import { definitionList } from "../dom.js";
import { usageText } from "./loops.js";

export function describeSide(side) {
  if (!side) return "—";
  const parts = [];
  if (side.genres?.length) parts.push(`genres ${side.genres.join(", ")}`);
  if (side.year_range) {
    const { start, end } = side.year_range;
    parts.push(
      start != null && end != null
        ? `years ${start}–${end}`
        : start != null
          ? `from ${start}`
          : `up to ${end}`,
    );
  }
  if (side.items?.length) parts.push(`items ${side.items.map((i) => `#${i}`).join(", ")}`);
  for (const soft of side.soft ?? [])
    parts.push(`like “${soft.text}”${soft.item != null ? ` (#${soft.item})` : ""}`);
  return parts.length ? parts.join("; ") : "—";
}

export function preferencesList(preferences) {
  return definitionList([
    ["Wants", describeSide(preferences?.positive)],
    ["Avoids", describeSide(preferences?.negative)],
  ]);
}

export function updateList(parsed) {
  return definitionList([
    ["Reset first", parsed.reset ? "yes" : "no"],
    ["Adds to wants", describeSide(parsed.positive)],
    ["Adds to avoids", describeSide(parsed.negative)],
    ["Lifts", describeSide(parsed.lift)],
  ]);
}

/** Which parser answered a command, why the LLM's answer was not used, and what it cost. */
export function parserText(command) {
  let text = command.parser ?? "—";
  if (command.fallback) {
    text += ` (the LLM parser failed${command.fallback_cause ? `: ${command.fallback_cause}` : ""}; the offline parser answered)`;
  }
  if (command.usage?.calls) text += ` · ${usageText(command.usage)}`;
  return text;
}
