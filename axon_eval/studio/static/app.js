// The labelling page: one segment at a time, resume where the rater stopped, amend earlier labels,
// every save through the outbox (api.js) and acknowledged only once the server has it on disk.

import { Outbox, call } from "./api.js";
import { LabelForm } from "./form.js";
import { bindKeys, helpTable } from "./keys.js";
import { $, flush as flushOutbox, labelToSend, nextPosition, problem as problemOf, reloadOnNewLink, startSession,
  status, toggleHelp as help } from "./page.js";
import { renderEvidence } from "./render.js";

const COMMAND = "label serve";
const app = { token: null, state: null, outbox: null, form: null, item: null, position: 0, shownAt: 0, retry: null };

function showProgress(progress) {
  app.state.progress = progress;
  $("progress").textContent = progress.done + " of " + progress.total + " labelled";
  $("median").textContent = progress.median_seconds === null ? "" : "median " + progress.median_seconds.toFixed(1) + " s per item";
  const waiting = app.outbox.size;
  if (waiting) status(waiting + " label(s) not yet saved: kept in this browser, re-sent automatically", "error");
}

const problem = (err) => problemOf(err, COMMAND);
const flush = () => flushOutbox(app, showProgress, COMMAND);

async function show(position) {
  const total = app.state.progress.total;
  if (position < 0 || position >= total) return;
  try {
    const item = await call(app.token, "/api/item/" + position);
    app.item = item;
    app.position = position;
    renderEvidence($("evidence"), item);
    app.form.load(item);
    app.shownAt = performance.now();
    window.scrollTo(0, 0);
  } catch (err) {
    status(problem(err), "error");
  }
}

async function save() {
  if (!app.item) return;
  const body = app.form.body();
  if (body.error) {
    app.form.message.textContent = body.error;
    return;
  }
  const label = labelToSend(app, body);
  app.outbox.add(label);
  status("saving\u2026");
  const ok = await flush();
  if (!ok) return;
  const p = app.state.progress;
  const next = nextPosition(app);
  if (next === null || next === undefined) {
    app.form.message.textContent = "All " + p.total + " segments are labelled. Alt+\u2190 goes back to amend.";
    app.item.label = { ...label, kind: body.skip ? "skip" : "label" };
    return;
  }
  await show(next);
}

async function main() {
  if (!(await startSession(app, COMMAND))) return;
  $("who").textContent = "rater " + app.state.rater;
  app.outbox = new Outbox(app.state.pack + ":" + app.state.rater);
  app.form = new LabelForm($("panel"), app.state.guide, { save, move: (d) => show(app.position + d) });
  helpTable($("help"));
  $("help-button").addEventListener("click", () => help());
  bindKeys(app.form, { save, move: (d) => show(app.position + d), help });
  for (const r of app.state.repairs) status(r, "error");
  showProgress(app.state.progress);
  await flush();
  const p = app.state.progress;
  await show(p.next === null ? p.total - 1 : p.next);
  document.body.dataset.ready = "1";
}

reloadOnNewLink();
main();
