// What both pages (the rater's and the reviewer's) share: the status line, label ids, flushing the
// outbox with retries, the help box, starting a session from the link's token, and taking a new link.

import { ApiError, call, takeToken } from "./api.js";

export const $ = (id) => document.getElementById(id);
const RETRY_MS = 2000;

export function status(text, kind) {
  const node = $("status");
  node.textContent = text;
  node.className = kind || "";
}

// A client-made id: a label re-sent after a lost acknowledgement is stored once.
export function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// What the page says of a failed call; `command` is the verb that printed the link.
export function problem(err, command) {
  if (err instanceof ApiError && err.status === 401) return "The studio was restarted: open the new link " + command + " printed (your unsaved labels are kept and sent then).";
  if (err instanceof ApiError) return err.message;
  return "The studio server cannot be reached; your unsaved labels are kept in this browser and re-sent when it is back.";
}

// Send what the outbox holds; true when nothing is left unsaved. A network error or a server error is
// retried every RETRY_MS; a refused label (4xx) is reported and kept for the rater to amend.
export async function flush(app, showProgress, command) {
  clearTimeout(app.retry);
  if (!app.outbox.size) return true;
  const result = await app.outbox.flush(app.token);
  if (result.last) showProgress(result.last.progress);
  for (const r of result.rejected) status("Not saved (" + r.message + ")", "error");
  if (result.error) {
    console.warn("outbox: " + result.error);
    status(problem(result.error, command), "error");
    if (!(result.error instanceof ApiError) || result.error.status >= 500) {
      app.retry = setTimeout(() => flush(app, showProgress, command), RETRY_MS);
    }
    return false;
  }
  if (!result.rejected.length) status(result.sent ? "saved" : "", "ok");
  return !result.rejected.length;
}

export function toggleHelp(force) {
  const box = $("help");
  box.hidden = force === undefined ? !box.hidden : !force;
}

// The label a save sends: the form's body, a fresh id, what it amends and the seconds spent on it.
export function labelToSend(app, body) {
  return {
    ...body, id: newId(), position: app.position, segment_id: app.item.evidence.segment_id,
    amends: app.item.label ? app.item.label.id : null,
    seconds: Math.round((performance.now() - app.shownAt) / 100) / 10,
  };
}

// The next position to show after a save: the first one left to do after this one, else the session's next.
export function nextPosition(app) {
  const p = app.state.progress;
  const following = p.states.findIndex((s, i) => i > app.position && s === "todo");
  return following >= 0 ? following : p.next;
}

// Read the token from the link and open the session; null (with the reason on the page) when it cannot.
export async function startSession(app, command) {
  app.token = takeToken();
  if (!app.token) {
    status("No token: open the link " + command + " printed.", "error");
    return null;
  }
  try {
    app.state = await call(app.token, "/api/session");
  } catch (err) {
    status(problem(err, command), "error");
    return null;
  }
  return app.state;
}

// A new link pasted into this tab (the server was restarted with a fresh token): take it and start again.
export function reloadOnNewLink() {
  window.addEventListener("hashchange", () => {
    if (/(?:^#|&)t=/.test(location.hash)) {
      takeToken();
      location.reload();
    }
  });
}
