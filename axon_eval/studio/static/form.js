// The label panel: four 0-10 scales with the rubric's description and anchors, the verdict, a comment,
// and "skip / cannot judge" with a reason. State lives here; keys.js and the mouse both change it.

import { el } from "./render.js";

export const VERDICT_KEYS = { g: "good", p: "partial", b: "poor" };

export class LabelForm {
  constructor(container, guide, handlers) {
    this.guide = guide;
    this.handlers = handlers;
    this.dims = guide.dimensions.map((d) => d.name);
    this.values = {};
    this.verdict = null;
    this.focus = 0;
    this.answerCaptured = true;
    this.rows = [];
    this.scaleButtons = [];
    const nodes = [el("h2", { text: "Your label" })];
    this.title = el("p", { class: "muted" });
    nodes.push(this.title);
    guide.dimensions.forEach((d, i) => {
      const value = el("span", { class: "value", "data-dim": d.name });
      const scale = el("div", { class: "scale", role: "group", "aria-label": d.name });
      const buttons = [];
      for (let v = 0; v <= 10; v++) {
        const b = el("button", { type: "button", tabindex: "-1", text: String(v) });
        b.addEventListener("click", () => { this.focusDim(i); this.set(d.name, v); });
        buttons.push(b);
        scale.append(b);
      }
      const anchors = el("ul", { class: "anchors" },
        el("li", { text: "10: " + d.anchors["10"] }), el("li", { text: "5: " + d.anchors["5"] }),
        el("li", { text: "0: " + d.anchors["0"] }));
      const row = el("div", { class: "dim", id: "dim-" + d.name },
        el("h3", {}, el("span", { text: (i + 1) + ". " + d.name }), value),
        el("p", { class: "muted", text: d.description }), scale, anchors);
      row.addEventListener("click", () => this.focusDim(i));
      this.rows.push({ row, value, name: d.name });
      this.scaleButtons.push(buttons);
      nodes.push(row);
    });
    const verdicts = el("div", { class: "verdicts", role: "group", "aria-label": "verdict" });
    this.verdictButtons = {};
    for (const [key, name] of Object.entries(VERDICT_KEYS)) {
      const meaning = (guide.verdicts.find((v) => v.name === name) || {}).meaning || "";
      const b = el("button", { type: "button", tabindex: "-1", title: meaning, id: "verdict-" + name }, name + " (" + key.toUpperCase() + ")");
      b.addEventListener("click", () => this.setVerdict(name));
      this.verdictButtons[name] = b;
      verdicts.append(b);
    }
    nodes.push(el("h3", { text: "Verdict" }), verdicts);
    this.comment = el("textarea", { id: "comment", rows: "3", maxlength: "4000", placeholder: "comment (N to focus, Esc to leave)" });
    nodes.push(el("h3", { text: "Comment" }), this.comment);
    this.skip = el("input", { type: "checkbox", id: "skip" });
    this.reason = el("input", { type: "text", id: "skip-reason", maxlength: "500", placeholder: "why it cannot be judged" });
    this.skip.addEventListener("change", () => this.refresh());
    nodes.push(el("p", {}, el("label", {}, this.skip, " skip / cannot judge (S)")), this.reason);
    this.previous = el("button", { type: "button", id: "previous" }, "\u2190 previous (Alt+\u2190)");
    this.next = el("button", { type: "button", id: "next" }, "next \u2192 (Alt+\u2192)");
    this.saveButton = el("button", { type: "button", id: "save" }, "Save and next (Ctrl+Enter)");
    this.previous.addEventListener("click", () => handlers.move(-1));
    this.next.addEventListener("click", () => handlers.move(1));
    this.saveButton.addEventListener("click", () => handlers.save());
    nodes.push(el("div", { class: "actions" }, this.previous, this.next, this.saveButton));
    this.message = el("p", { id: "form-message", role: "alert" });
    nodes.push(this.message);
    container.replaceChildren(...nodes);
  }

  load(item) {
    const label = item.label;
    this.answerCaptured = item.evidence.answer_captured;
    this.values = {};
    this.verdict = null;
    this.comment.value = "";
    this.skip.checked = false;
    this.reason.value = "";
    if (label) {
      for (const d of this.dims) if (label[d] !== null && label[d] !== undefined) this.values[d] = label[d];
      this.verdict = label.verdict;
      this.comment.value = label.comment || "";
      if (label.kind === "skip") { this.skip.checked = true; this.reason.value = label.skip_reason || ""; }
    }
    this.title.textContent = (label ? "Saved earlier: a new save amends it. " : "") + "Segment " + (item.position + 1) + " of " + item.total;
    this.message.textContent = "";
    this.focus = 0;
    this.refresh();
  }

  enabled(i) {
    return !(this.dims[i] === "answer_faithfulness" && !this.answerCaptured);
  }

  focusDim(i) {
    this.focus = Math.max(0, Math.min(this.dims.length - 1, i));
    this.refresh();
  }

  set(name, v) {
    const i = this.dims.indexOf(name);
    if (!this.enabled(i)) return;
    this.values[name] = Math.max(0, Math.min(10, v));
    this.refresh();
  }

  adjust(delta) {
    const name = this.dims[this.focus];
    const current = this.values[name];
    this.set(name, current === undefined ? (delta > 0 ? 0 : 10) : current + delta);
  }

  setVerdict(name) {
    this.verdict = name;
    this.refresh();
  }

  refresh() {
    this.rows.forEach((r, i) => {
      r.row.classList.toggle("focused", i === this.focus);
      r.row.classList.toggle("disabled", !this.enabled(i));
      const v = this.values[r.name];
      r.value.textContent = !this.enabled(i) ? "not graded" : v === undefined ? "\u2013" : String(v);
      this.scaleButtons[i].forEach((b, k) => b.classList.toggle("on", v === k));
    });
    for (const [name, b] of Object.entries(this.verdictButtons)) b.classList.toggle("on", this.verdict === name);
    this.reason.disabled = !this.skip.checked;
  }

  // The label body the server checks, or an error sentence.
  body() {
    if (this.skip.checked) {
      if (!this.reason.value.trim()) return { error: "Give the reason it cannot be judged." };
      return { skip: this.reason.value.trim(), comment: this.comment.value };
    }
    const scores = {};
    for (let i = 0; i < this.dims.length; i++) {
      const d = this.dims[i];
      if (!this.enabled(i)) { scores[d] = null; continue; }
      if (this.values[d] === undefined) return { error: "Give " + d + " a value 0-10." };
      scores[d] = this.values[d];
    }
    if (!this.verdict) return { error: "Choose a verdict (G good, P partial, B poor)." };
    return { scores, verdict: this.verdict, comment: this.comment.value };
  }
}
