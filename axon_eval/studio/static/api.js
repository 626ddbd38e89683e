// The server connection: the token, JSON calls, and the outbox of labels not yet acknowledged.
// The outbox lives in localStorage (per address of the studio), so a label survives a network error, a
// closed tab or a server restart; it is re-sent until the server answers that it is saved (the server
// stores a label id once, so re-sending is harmless).

const TOKEN_KEY = "axon-studio-token";

export function takeToken() {
  const match = /(?:^#|&)t=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, match[1]);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function call(token, path, body) {
  const init = { headers: { Authorization: "Bearer " + token }, cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let payload = null;
  try {
    payload = await response.json();
  } catch (err) {
    payload = null;
  }
  if (!response.ok) {
    const message = payload && payload.error ? payload.error : "HTTP " + response.status;
    throw new ApiError(response.status, message);
  }
  return payload;
}

export class Outbox {
  constructor(key) {
    this.key = "axon-studio-outbox:" + key;
  }
  items() {
    try {
      return JSON.parse(localStorage.getItem(this.key) || "[]");
    } catch (err) {
      return [];
    }
  }
  write(items) {
    localStorage.setItem(this.key, JSON.stringify(items));
  }
  add(label) {
    const items = this.items().filter((x) => x.id !== label.id);
    items.push(label);
    this.write(items);
  }
  remove(id) {
    this.write(this.items().filter((x) => x.id !== id));
  }
  get size() {
    return this.items().length;
  }
  // Send every waiting label in order; returns {sent, failed, error, last}. A network error or a full
  // disk keeps the label (and the ones after it) for the next try; a label the server refuses as invalid
  // is dropped from the outbox and reported.
  async flush(token) {
    const result = { sent: 0, rejected: [], error: null, last: null };
    for (const label of this.items()) {
      try {
        result.last = await call(token, "/api/label", label);
        this.remove(label.id);
        result.sent += 1;
      } catch (err) {
        if (err instanceof ApiError && err.status === 422) {
          this.remove(label.id);
          result.rejected.push({ label, message: err.message });
          continue;
        }
        result.error = err;
        break;
      }
    }
    return result;
  }
}
