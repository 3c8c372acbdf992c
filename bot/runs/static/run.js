// The run page's live part: records arrive over Server-Sent Events and are
// placed as the server rendered them (escaped there); this script never
// builds markup from text. A reconnect resumes after the last record seen
// (the browser sends Last-Event-ID), and a record already shown is skipped.
"use strict";
(() => {
  const main = document.querySelector("main[data-job]");
  if (!main || main.dataset.final === "true") return;
  const log = document.getElementById("transcript");
  const field = (name) => main.querySelector(`[data-field="${name}"]`);
  const started = Number(main.dataset.started);
  let last = Number(main.dataset.after) || 0;
  let ended = false;

  const duration = (seconds) => {
    const whole = Math.max(0, Math.floor(seconds));
    if (whole < 60) return `${whole}s`;
    const minutes = Math.floor(whole / 60);
    if (minutes < 60) return `${minutes}m ${String(whole % 60).padStart(2, "0")}s`;
    return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`;
  };
  const tick = setInterval(() => {
    if (!ended) field("elapsed").textContent = duration(Date.now() / 1000 - started);
  }, 1000);

  const fragment = (html) => {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  };
  const byKey = (key) => main.querySelector(`[data-key="${CSS.escape(key)}"]`);

  // The element an item goes in: the transcript, a subagent's box (made when
  // its first record arrives), or a tool call's.
  const container = (key) => {
    if (!key) return log;
    const found = byKey(key);
    if (found) return found.querySelector(":scope > .body") || found;
    if (!key.startsWith("agent:")) return log;
    const path = key.slice("agent:".length);
    const cut = path.lastIndexOf("/");
    const box = document.createElement("details");
    box.className = "ev agent";
    box.open = true;
    box.dataset.key = key;
    const summary = document.createElement("summary");
    summary.textContent = `Subagent ${path.slice(cut + 1)}`;
    const body = document.createElement("div");
    body.className = "body";
    box.append(summary, body);
    container(cut < 0 ? null : `agent:${path.slice(0, cut)}`).append(box);
    return body;
  };

  const setHeader = (fields) => {
    for (const [name, value] of Object.entries(fields)) {
      const target = field(name);
      if (!target) continue;
      if (name === "checklist") {
        target.replaceChildren(fragment(value));
      } else if (name === "limits") {
        const items = value.map(({ name: limit, left }) => {
          const li = document.createElement("li");
          const label = document.createElement("span");
          label.className = "name";
          label.textContent = limit;
          li.append(label, ` ${left}`);
          return li;
        });
        if (items.length) target.replaceChildren(...items);
      } else {
        target.textContent = value;
        if (name === "state") target.className = `state state-${value}`;
      }
    }
  };

  const nearBottom = () =>
    window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;

  const apply = (update) => {
    const follow = nearBottom();
    if (update.header) setHeader(update.header);
    if (update.html !== undefined) {
      log.querySelector(":scope > .waiting")?.remove();
      if (update.kind === "tool_result" && update.into && byKey(update.into)) {
        const call = byKey(update.into);
        call.querySelector(".result").replaceChildren(fragment(update.html));
        const status = call.querySelector(":scope > summary .status");
        status.textContent = update.status;
        status.classList.toggle("error", Boolean(update.error));
      } else if (update.kind === "tool_result") {
        container(update.alone_into).append(fragment(update.alone));
      } else {
        container(update.into).append(fragment(update.html));
      }
    }
    if (follow) window.scrollTo(0, document.body.scrollHeight);
  };

  const source = new EventSource(`${main.dataset.events}?after=${last}`);
  source.onmessage = (event) => {
    const update = JSON.parse(event.data);
    if (update.seq <= last) return; // already shown
    last = update.seq;
    main.dataset.after = String(last);
    apply(update);
  };
  source.addEventListener("end", () => {
    source.close();
    ended = true;
    clearInterval(tick);
    main.dataset.final = "true";
    field("live").textContent = "The run has ended.";
  });
  source.onerror = () => {
    if (!ended) field("live").textContent = "Reconnecting…";
  };
  source.onopen = () => {
    field("live").textContent = "Live: the transcript grows as the run goes on.";
  };
})();
