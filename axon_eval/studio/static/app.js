// The labelling page: one segment at a time, resume where the rater stopped, amend earlier labels,
// every save through the outbox (api.js) and acknowledged only once the server has it on disk.

import { ApiError, Outbox, call, takeToken } from "./api.js";
import { LabelForm } from "./form.js";
import { bindKeys, helpTable } from "./keys.js";
import { renderEvidence } from "./render.js";

const $ = (id) => document.getElementById(id);
const RETRY_MS = 2000;

const app = { token: null, state: null, outbox: null, form: null, item: null, position: 0, shownAt: 0, retry: null };

function status(text, kind) {
  const node = $("status");
  node.textContent = text;
  node.className = kind || "";
}

function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function showProgress(progress) {
  app.state.progress = progress;
  $("progress").textContent = progress.done + " of " + progress.total + " labelled";
  $("median").textContent = progress.median_seconds === null ? "" : "median " + progress.median_seconds.toFixed(1) + " s per item";
  const waiting = app.outbox.size;
  if (waiting) status(waiting + " label(s) not yet saved: kept in this browser, re-sent automatically", "error");
}

function problem(err) {
  if (err instanceof ApiError && err.status === 401) return "The studio was restarted: open the new link label serve printed (your unsaved labels are kept and sent then).";
  if (err instanceof ApiError) return err.message;
  return "The studio server cannot be reached; your unsaved labels are kept in this browser and re-sent when it is back.";
}

async function flush() {
  clearTimeout(app.retry);
  if (!app.outbox.size) return true;
  const result = await app.outbox.flush(app.token);
  if (result.last) showProgress(result.last.progress);
  for (const r of result.rejected) status("Not saved (" + r.message + ")", "error");
  if (result.error) {
    console.warn("outbox: " + result.error);
    status(problem(result.error), "error");
    if (!(result.error instanceof ApiError) || result.error.status >= 500) app.retry = setTimeout(flush, RETRY_MS);
    return false;
  }
  if (!result.rejected.length) status(result.sent ? "saved" : "", "ok");
  return !result.rejected.length;
}

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
  const label = {
    ...body, id: newId(), position: app.position, segment_id: app.item.evidence.segment_id,
    amends: app.item.label ? app.item.label.id : null,
    seconds: Math.round((performance.now() - app.shownAt) / 100) / 10,
  };
  app.outbox.add(label);
  status("saving\u2026");
  const ok = await flush();
  if (!ok) return;
  const p = app.state.progress;
  const following = p.states.findIndex((s, i) => i > app.position && s === "todo");
  const next = following >= 0 ? following : p.next;
  if (next === null || next === undefined) {
    app.form.message.textContent = "All " + p.total + " segments are labelled. Alt+\u2190 goes back to amend.";
    app.item.label = { ...label, kind: body.skip ? "skip" : "label" };
    return;
  }
  await show(next);
}

function help(force) {
  const box = $("help");
  box.hidden = force === undefined ? !box.hidden : !force;
}

async function main() {
  app.token = takeToken();
  if (!app.token) {
    status("No token: open the link label serve printed.", "error");
    return;
  }
  try {
    app.state = await call(app.token, "/api/session");
  } catch (err) {
    status(problem(err), "error");
    return;
  }
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

// A new link pasted into this tab (the server was restarted with a fresh token): take it and start again.
window.addEventListener("hashchange", () => {
  if (/(?:^#|&)t=/.test(location.hash)) {
    takeToken();
    location.reload();
  }
});

main();
