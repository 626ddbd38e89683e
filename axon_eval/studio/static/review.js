// The review page: the disagreements `label review` lists, one at a time, with the segment's blind
// evidence and the raters' labels side by side; the reviewer types the adjudicated label (the rater's
// form and keys) and it is saved through the outbox like any label. The judge's grades come only on
// request (J), only for a segment the reviewer has labelled themself, and the server records the showing.

import { Outbox, call } from "./api.js";
import { LabelForm } from "./form.js";
import { bindKeys, helpTable } from "./keys.js";
import { $, flush as flushOutbox, labelToSend, nextPosition, problem as problemOf, reloadOnNewLink, startSession,
  status, toggleHelp as help } from "./page.js";
import { el, renderEvidence } from "./render.js";

const COMMAND = "label review --serve";
const app = { token: null, state: null, outbox: null, form: null, item: null, position: 0, shownAt: 0, retry: null };

function showProgress(progress) {
  app.state.progress = progress;
  $("progress").textContent = progress.done + " of " + progress.total + " adjudicated";
  const waiting = app.outbox.size;
  if (waiting) status(waiting + " label(s) not yet saved: kept in this browser, re-sent automatically", "error");
}

const problem = (err) => problemOf(err, COMMAND);
const flush = () => flushOutbox(app, showProgress, COMMAND);

function score(value) {
  return value === null || value === undefined ? "\u2013" : String(value);
}

function renderRaters(item) {
  const dims = app.state.dimensions;
  const head = el("tr", {}, el("th", { text: "rater" }), ...dims.map((d) => el("th", { text: d })),
    el("th", { text: "verdict" }), el("th", { text: "comment" }));
  const table = el("table", { id: "raters-table" }, head);
  for (const r of item.raters) {
    table.append(el("tr", { "data-rater": r.rater }, el("td", { text: r.rater }),
      ...dims.map((d) => el("td", { text: score(r[d]) })), el("td", { text: r.verdict || "" }),
      el("td", { class: "text", text: r.comment || "" })));
  }
  table.append(el("tr", { class: "muted" }, el("td", { text: "spread" }),
    ...dims.map((d) => el("td", { text: String(item.spread[d]) })),
    el("td", { text: item.verdicts_differ ? "differ" : "agree" }), el("td", {})));
  const notes = [];
  if (item.label) notes.push(el("p", { class: "note", text: "Adjudicated earlier by " + item.label.reviewer + ": a new save amends it." }));
  $("raters").replaceChildren(el("h2", { text: "Disagreement " + (item.position + 1) + " of " + item.total }),
    el("div", { class: "table-wrap" }, table), ...notes);
}

function renderJudge(item, grades) {
  const box = $("judge");
  if (grades) {
    const dims = app.state.dimensions;
    box.replaceChildren(el("p", { class: "note", id: "judge-grades" },
      "judge: " + dims.map((d) => d + " " + score(grades[d])).join(", ") + ", verdict " + grades.verdict +
      " (this showing is recorded; an adjudication saved now says so)"));
    return;
  }
  const button = el("button", { type: "button", id: "show-judge" }, "show the judge's grades (J)");
  button.disabled = !item.can_show_judge;
  button.addEventListener("click", () => showJudge());
  const why = item.can_show_judge ? "Only after your own label of this segment; the showing is recorded."
    : "Hidden: shown only to a reviewer who has labelled this segment themself (label serve --rater " + app.state.reviewer + ").";
  box.replaceChildren(el("p", { class: "muted" }, button, " ", why));
}

async function showJudge() {
  if (!app.item || !app.item.can_show_judge) return;
  try {
    const answer = await call(app.token, "/api/judge", { position: app.position });
    renderJudge(app.item, answer.judge);
  } catch (err) {
    status(problem(err), "error");
  }
}

async function show(position) {
  const total = app.state.progress.total;
  if (position < 0 || position >= total) return;
  try {
    const item = await call(app.token, "/api/item/" + position);
    app.item = item;
    app.position = position;
    renderRaters(item);
    renderJudge(item, null);
    renderEvidence($("evidence"), item);
    app.form.load(item);
    app.form.title.textContent = (item.label ? "Adjudicated earlier: a new save amends it. " : "") +
      "Disagreement " + (item.position + 1) + " of " + item.total;
    app.shownAt = performance.now();
    window.scrollTo(0, 0);
  } catch (err) {
    status(problem(err), "error");
  }
}

async function save() {
  if (!app.item) return;
  if (app.form.skip.checked) {
    app.form.skip.checked = false;
    app.form.refresh();
    app.form.message.textContent = "An adjudicated label needs the four scores and a verdict, not a skip.";
    return;
  }
  const body = app.form.body();
  if (body.error) {
    app.form.message.textContent = body.error;
    return;
  }
  const label = labelToSend(app, body);
  app.outbox.add(label);
  status("saving\u2026");
  if (!(await flush())) return;
  const p = app.state.progress;
  const next = nextPosition(app);
  if (next === null || next === undefined) {
    app.form.message.textContent = "All " + p.total + " disagreements are adjudicated. Alt+\u2190 goes back to amend.";
    app.item.label = { ...label, kind: "label", reviewer: app.state.reviewer };
    return;
  }
  await show(next);
}

async function main() {
  if (!(await startSession(app, COMMAND))) return;
  $("who").textContent = "reviewer " + app.state.reviewer;
  app.outbox = new Outbox(app.state.pack + ":" + app.state.reviewer);
  const move = (d) => show(app.position + d);
  app.form = new LabelForm($("panel"), app.state.guide, { save, move });
  app.form.skip.disabled = true;
  app.form.skip.closest("p").hidden = true;
  app.form.reason.hidden = true;
  $("panel").querySelector("h2").textContent = "Adjudicated label";
  helpTable($("help"));
  $("help").querySelector("table").append(el("tr", {}, el("td", {}, el("kbd", { text: "J" })),
    el("td", { text: "show the judge's grades (only of a segment you labelled yourself; recorded)" })));
  $("help-button").addEventListener("click", () => help());
  bindKeys(app.form, { save, move, help });
  document.addEventListener("keydown", (ev) => {
    const typing = ev.target instanceof HTMLTextAreaElement || ev.target instanceof HTMLInputElement;
    if (!typing && !ev.ctrlKey && !ev.metaKey && !ev.altKey && ev.key.toLowerCase() === "j") {
      ev.preventDefault();
      showJudge();
    }
  });
  for (const r of app.state.repairs) status(r, "error");
  showProgress(app.state.progress);
  await flush();
  const p = app.state.progress;
  if (!p.total) {
    $("evidence").replaceChildren(el("p", { text: "No disagreement above threshold " + app.state.threshold + ": nothing to adjudicate." }));
  } else {
    await show(p.next === null ? p.total - 1 : p.next);
  }
  document.body.dataset.ready = "1";
}

reloadOnNewLink();
main();
