// The evidence of one segment, built with createElement and textContent only: nothing the evidence
// holds is ever parsed as HTML. Control and bidirectional-override characters are shown as visible
// code points, so a cell cannot reorder or hide the text around it.

const INVISIBLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
const CELL_CHARS = 4000;
const ROWS_AT_ONCE = 200;
const SQL_TOKENS = /('(?:[^']|'')*')|(--[^\n]*)|\b(SELECT|FROM|WHERE|JOIN|LEFT|RIGHT|INNER|OUTER|FULL|CROSS|ON|AND|OR|NOT|GROUP|BY|ORDER|HAVING|LIMIT|OFFSET|AS|CASE|WHEN|THEN|ELSE|END|WITH|UNION|ALL|DISTINCT|IN|IS|NULL|BETWEEN|LIKE|COUNT|SUM|AVG|MIN|MAX|ROUND|DESC|ASC|OVER|PARTITION|INSERT|UPDATE|DELETE|CAST)\b/gi;

export function visible(text) {
  return String(text).replace(INVISIBLE, (c) => "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9");
}

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = visible(value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(visible(child)) : child);
  }
  return node;
}

function longText(tag, value) {
  const text = value === null || value === undefined ? "null" : visible(value);
  const node = el(tag, { class: "text" });
  if (text.length <= CELL_CHARS) {
    node.textContent = text;
    return node;
  }
  node.textContent = text.slice(0, CELL_CHARS);
  const more = el("button", { type: "button", class: "more" });
  more.textContent = "show all " + text.length.toLocaleString() + " characters";
  more.addEventListener("click", () => {
    node.textContent = text;
  });
  const box = el("div", {}, node, more);
  return box;
}

export function highlightSql(sql) {
  const pre = el("pre", { class: "sql" });
  const text = visible(sql || "");
  let at = 0;
  for (const m of text.matchAll(SQL_TOKENS)) {
    if (m.index > at) pre.append(document.createTextNode(text.slice(at, m.index)));
    const cls = m[1] ? "str" : m[2] ? "com" : "kw";
    const span = el("span", { class: cls });
    span.textContent = m[0];
    pre.append(span);
    at = m.index + m[0].length;
  }
  if (at < text.length) pre.append(document.createTextNode(text.slice(at)));
  return pre;
}

function rowsTable(step) {
  const table = el("table");
  const head = el("tr");
  for (const c of step.columns) head.append(el("th", { text: c }));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  table.append(body);
  let shown = 0;
  const wrap = el("div", { class: "table-wrap" }, table);
  const more = el("button", { type: "button", class: "more" });
  const addRows = () => {
    const end = Math.min(step.rows.length, shown + ROWS_AT_ONCE);
    const frag = document.createDocumentFragment();
    for (; shown < end; shown++) {
      const tr = document.createElement("tr");
      for (const cell of step.rows[shown]) {
        const td = document.createElement("td");
        td.append(longText("span", cell === null ? "NULL" : typeof cell === "string" ? cell : JSON.stringify(cell)));
        tr.append(td);
      }
      frag.append(tr);
    }
    body.append(frag);
    more.hidden = shown >= step.rows.length;
    more.textContent = "show " + Math.min(ROWS_AT_ONCE, step.rows.length - shown) + " more rows";
  };
  more.addEventListener("click", addRows);
  addRows();
  return el("div", {}, wrap, more);
}

function rowCountLine(step) {
  const total = step.row_count === null ? "an unknown number of" : step.row_count.toLocaleString();
  let line = "The judge saw " + step.rows_seen.toLocaleString() + " of the " + total + " rows the statement returned.";
  if (step.rows.length < step.rows_seen) line += " The first " + step.rows.length.toLocaleString() + " are sent here.";
  return el("p", { class: "muted", text: line });
}

function renderStep(step, number) {
  const box = el("div", { class: "step" });
  if (step.kind === "sql") {
    box.append(el("h3", { text: "Step " + number + ": SQL (" + step.status + ")" }), highlightSql(step.sql));
    if (step.error) box.append(el("p", {}, el("strong", { text: "error: " }), longText("span", step.error)));
    if (step.status === "ok") box.append(rowCountLine(step), rowsTable(step));
    if (step.status === "blocked") box.append(el("p", { class: "muted", text: "Refused by the guardrail before execution: nothing ran." }));
  } else {
    box.append(el("h3", { text: "Step " + number + ": tool " + (step.name || "?") + " (" + step.status + ")" }));
    box.append(el("p", { class: "muted", text: "arguments" }), longText("pre", step.args));
    box.append(el("p", { class: "muted", text: "output" }), longText("pre", step.output));
    if (step.error) box.append(el("p", {}, el("strong", { text: "error: " }), longText("span", step.error)));
  }
  return box;
}

function renderBundled(b, question) {
  const box = el("div", { class: "note" });
  box.append(el("p", { text: "This turn relayed " + b.of + " questions in one message; you grade question " + b.index + " of " + b.of + " only. The steps and the answer cover all of them." }));
  if (b.message && b.message.start !== null) {
    const pre = el("pre", { class: "message" });
    const text = b.message.text;
    pre.append(document.createTextNode(visible(text.slice(0, b.message.start))));
    pre.append(el("mark", { text: text.slice(b.message.start, b.message.end) }));
    pre.append(document.createTextNode(visible(text.slice(b.message.end))));
    box.append(el("p", { class: "muted", text: "The whole message (the part you grade is marked):" }), pre);
  } else {
    const list = el("ol");
    b.parts.forEach((part, i) => {
      const item = el("li", {}, i + 1 === b.index ? el("mark", { text: part }) : part);
      list.append(item);
    });
    if (b.message) box.append(el("p", { class: "muted", text: "The whole message:" }), longText("pre", b.message.text));
    box.append(el("p", { class: "muted", text: "The questions of the message (the one you grade is marked):" }), list);
  }
  return box;
}

export function renderEvidence(container, item) {
  const ev = item.evidence;
  const nodes = [];
  nodes.push(el("h2", { text: "Question the judge graded" }), longText("pre", ev.question));
  if (ev.bundled) nodes.push(renderBundled(ev.bundled, ev.question));
  if (ev.surface) nodes.push(el("p", { class: "muted", text: "surface: " + ev.surface + " \u00b7 segment " + ev.segment_id }));
  nodes.push(el("h2", { text: "What the assistant did (" + ev.steps.length + " steps)" }));
  ev.steps.forEach((s, i) => nodes.push(renderStep(s, i + 1)));
  nodes.push(el("h2", { text: "Answer" }));
  if (ev.answer_captured) nodes.push(longText("pre", ev.answer));
  else nodes.push(el("p", { class: "note", text: "No answer was captured (the client's own AI composed it): answer_faithfulness is not graded for this segment." }));
  container.replaceChildren(...nodes);
}
