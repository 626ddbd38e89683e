// Keyboard first: digits set the focused dimension (1 then 0 within 600 ms gives 10), arrows move
// (up/down) and adjust (left/right), G/P/B set the verdict, N focuses the comment, S toggles skip,
// Alt+arrows go to the previous or next segment, Ctrl+Enter saves and opens the next, ? shows the keys.
// While typing in a text field only Ctrl+Enter and Escape act.

import { VERDICT_KEYS } from "./form.js";
import { el } from "./render.js";

export const KEYS = [
  ["0 \u2013 9", "set the focused dimension (1 then 0 quickly: 10)"],
  ["\u2191 / \u2193", "focus the previous / next dimension"],
  ["\u2190 / \u2192", "lower / raise the focused dimension by 1"],
  ["G / P / B", "verdict good / partial / poor"],
  ["N", "write a comment (Esc leaves the field)"],
  ["S", "skip / cannot judge (then type the reason)"],
  ["Ctrl+Enter", "save and open the next segment"],
  ["Alt+\u2190 / Alt+\u2192", "previous / next segment"],
  ["?", "show or hide these keys"],
];

export function helpTable(box) {
  const table = el("table");
  for (const [key, what] of KEYS) table.append(el("tr", {}, el("td", {}, el("kbd", { text: key })), el("td", { text: what })));
  box.replaceChildren(el("h2", { text: "Keys" }), table, el("p", { class: "muted", text: "Esc or ? closes." }));
}

export function bindKeys(form, actions) {
  let pendingOne = null;
  document.addEventListener("keydown", (ev) => {
    const typing = ev.target instanceof HTMLTextAreaElement || ev.target instanceof HTMLInputElement;
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      actions.save();
      return;
    }
    if (ev.key === "Escape") {
      if (typing) ev.target.blur();
      actions.help(false);
      return;
    }
    if (typing || ev.ctrlKey || ev.metaKey) return;
    if (ev.altKey && (ev.key === "ArrowLeft" || ev.key === "ArrowRight")) {
      ev.preventDefault();
      actions.move(ev.key === "ArrowLeft" ? -1 : 1);
      return;
    }
    if (ev.altKey) return;
    const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (/^[0-9]$/.test(key)) {
      ev.preventDefault();
      const name = form.dims[form.focus];
      const now = performance.now();
      if (key === "0" && pendingOne && pendingOne.name === name && now - pendingOne.at < 600) {
        form.set(name, 10);
        pendingOne = null;
        return;
      }
      form.set(name, Number(key));
      pendingOne = key === "1" ? { name, at: now } : null;
      return;
    }
    pendingOne = null;
    if (key === "ArrowUp" || key === "ArrowDown") {
      ev.preventDefault();
      form.focusDim(form.focus + (key === "ArrowUp" ? -1 : 1));
    } else if (key === "ArrowLeft" || key === "ArrowRight") {
      ev.preventDefault();
      form.adjust(key === "ArrowLeft" ? -1 : 1);
    } else if (VERDICT_KEYS[key]) {
      ev.preventDefault();
      form.setVerdict(VERDICT_KEYS[key]);
    } else if (key === "n") {
      ev.preventDefault();
      form.comment.focus();
    } else if (key === "s") {
      ev.preventDefault();
      form.skip.checked = !form.skip.checked;
      form.refresh();
      if (form.skip.checked) form.reason.focus();
    } else if (key === "?") {
      ev.preventDefault();
      actions.help();
    }
  });
}
