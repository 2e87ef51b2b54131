import { createHash } from 'node:crypto';
import { FLOWS_HTML, FLOWS_SCRIPT, FLOWS_STYLE } from './dashboard-flows.js';
import { SCHEDULES_HTML, SCHEDULES_SCRIPT, SCHEDULES_STYLE } from './dashboard-schedules.js';
import { DEPTH_HTML, DEPTH_SCRIPT, DEPTH_STYLE } from './dashboard-depth.js';
import { SEARCH_HTML, SEARCH_SCRIPT, SEARCH_STYLE } from './dashboard-search.js';
import { CANCELLABLE, DELETABLE, RETRYABLE } from '../job-queue/bulk-operations.js';

/**
 * The dashboard: one static page, served as is (nothing to build, no assets), that reads the
 * admin API relative to its own address. Every value from the database is inserted as text
 * (`textContent`), never as HTML: error messages and payloads are attacker-controllable.
 * Changing requests carry `X-Jobs-Admin: 1`, which a cross-site form cannot send. Its poll is
 * conditional: each GET sends the `ETag` it last got (`ConditionalGetInterceptor`), and a part of
 * the page whose answer came back 304 is not drawn again (`fill`).
 */
const SCRIPT = String.raw`
"use strict";
const base = location.pathname.replace(/\/+$/, "");
// Each GET's last answer and its ETag, by address. A poll sends the tag (If-None-Match); a 304 has
// no body and hands back the one kept here, the very same object, which tells the page that what it
// drew from it is still true (see redraw). "no-store" keeps the browser's cache out of the way: it
// neither answers for the server nor turns the server's 304 into the 200 it stored, so the page
// sees the 304 itself. A search's addresses come and go: only the latest ones are kept.
const KEPT_ANSWERS = 64;
const answers = new Map();
function api(path, init) {
  const url = base + "/api/" + path;
  const kept = !init || !init.method || init.method === "GET" ? answers.get(url) : undefined;
  const headers = Object.assign({}, init && init.headers, kept ? { "If-None-Match": kept.etag } : {});
  return fetch(url, Object.assign({ credentials: "same-origin", cache: "no-store" }, init, { headers }))
    .then((res) => {
      answers.delete(url);
      if (res.status === 304 && kept) {
        answers.set(url, kept);
        return kept.body;
      }
      return res.json().then((body) => {
        if (!res.ok) throw new Error(body && body.message ? body.message : res.statusText);
        const etag = res.headers.get("ETag");
        if (etag && (!init || !init.method || init.method === "GET")) {
          answers.set(url, { etag, body });
          if (answers.size > KEPT_ANSWERS) answers.delete(answers.keys().next().value);
        }
        return body;
      });
    });
}
const $ = (id) => document.getElementById(id);
// The states a retry, a cancel and a delete take, as the queue's bulk calls define them.
const RETRYABLE_STATES = ${JSON.stringify(RETRYABLE)};
const CANCELLABLE_STATES = ${JSON.stringify(CANCELLABLE)};
const DELETABLE_STATES = ${JSON.stringify(DELETABLE)};
function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value;
    else if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value);
  }
  for (const child of children || []) node.append(child);
  return node;
}
// A link to the jobs a search finds (its fields, as the Find form takes them), followed in place.
const findLink = (text, search) => el("a", { class: "find-link", href: "?" + new URLSearchParams(search), title: "Find these jobs", text: String(text) });
const when = (value) => (value ? new Date(value).toLocaleString() : "");
// A time in the viewer's zone, and in UTC on hover.
function at(value) {
  if (!value) return "";
  const iso = new Date(value).toISOString();
  return el("time", { datetime: iso, title: iso.slice(0, 19).replace("T", " ") + " UTC", text: when(value) });
}
const secs = (value) => (value === null || value === undefined ? "none" : Math.round(value) + " s");
const json = (value) => { const text = JSON.stringify(value); return text.length > 120 ? text.slice(0, 117) + "..." : text; };
// The rows each table was last drawn from. Rows of an answer that a 304 handed back are that same
// array: the table is left as it is, so a row keeps the keyboard focus (rows take it: Tab, then
// Enter opens the job), a selection and the scroll stay, and the page does no work.
const drawnFrom = new WeakMap();
function fill(tbody, rows, columns, empty, attrs = (row) => (row.id ? { "data-job-id": row.id, tabindex: "0" } : { "data-job-id": "" })) {
  if (drawnFrom.get(tbody) === rows) return;
  drawnFrom.set(tbody, rows);
  tbody.replaceChildren();
  if (rows.length === 0) {
    tbody.append(el("tr", {}, [el("td", { colspan: String(columns.length), class: "empty", text: empty })]));
    return;
  }
  for (const row of rows) {
    tbody.append(el("tr", attrs(row), columns.map((column) => {
      const value = column(row);
      return el("td", {}, [value instanceof Node ? value : document.createTextNode(String(value ?? ""))]);
    })));
  }
}
// What a table's drawing depends on besides its rows (the clock): when it changes, the table is
// drawn again from the same rows.
const drawnWith = new WeakMap();
function dependsOn(tbody, variant) {
  if (drawnWith.get(tbody) === variant) return;
  drawnWith.set(tbody, variant);
  drawnFrom.delete(tbody);
}
function act(path, done) {
  return api(path, { method: "POST", headers: { "X-Jobs-Admin": "1" } })
    .then(() => { say(done); return refresh(); })
    .catch((err) => say(err.message, true));
}
const JOB_DONE = { retry: " queued again.", cancel: " cancelled.", run: " is due now." };
// A pending job that waits for its time (a later start, a retry's backoff, a snooze) can be run now.
const waitsForItsTime = (job) => job.state === "pending" && job.waitUntil && new Date(job.waitUntil) > Date.now();
const QUEUE_DONE = { pause: " paused.", resume: " resumed." };
function retryFailed(task) {
  return api("jobs/retry?state=failed&task=" + encodeURIComponent(task), { method: "POST", headers: { "X-Jobs-Admin": "1" } })
    .then((body) => { say(body.retried + " failed job(s) of " + task + " queued again."); return refresh(); })
    .catch((err) => say(err.message, true));
}
function say(text, isError) {
  const note = $("note");
  note.textContent = text;
  note.className = isError ? "error" : "";
}
function button(label, action, id) {
  return el("button", { type: "button", "data-action": action, text: label, onclick: () => act("jobs/" + id + "/" + action, "Job " + id + JOB_DONE[action]) });
}
function progress(value) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "number") return json(value);
  const bar = el("progress", { max: "100", value: String(value), title: value + " %" });
  return el("span", {}, [bar, document.createTextNode(" " + Math.round(value) + " %")]);
}
// A list has a preview of the progress (JSON text, maybe cut): a bar when it is a number's.
function listedProgress(preview) {
  if (preview === null || preview === undefined) return "";
  const value = Number(preview);
  return Number.isFinite(value) ? progress(value) : preview;
}
function queueButton(queue) {
  const action = queue.paused ? "resume" : "pause";
  return el("button", { type: "button", "data-queue-action": action, text: queue.paused ? "Resume" : "Pause", onclick: () => act("queues/" + encodeURIComponent(queue.name) + "/" + action, "Queue " + queue.name + QUEUE_DONE[action]) });
}
function limits(queue) {
  const parts = [];
  if (queue.concurrency !== undefined) parts.push(queue.concurrency + " per instance");
  if (queue.globalConcurrency !== undefined) parts.push(queue.globalConcurrency + " in the cluster");
  if (queue.rateLimit !== undefined) parts.push(queue.rateLimit.limit + " starts / " + queue.rateLimit.periodSeconds + " s");
  if (queue.groupConcurrency !== undefined) parts.push(queue.groupConcurrency + " per group");
  return parts.join(", ") || "none";
}
// A bar per point (a minute, or a bin of minutes), its series stacked from the bottom (each
// [key, class]), and each bar's description on hover; returns the largest bar's total. Points of
// the answer it was drawn from last leave it as it is.
function chart(svg, points, series, describe) {
  if (drawnFrom.get(svg) === points) return Number(svg.dataset.max);
  drawnFrom.set(svg, points);
  const width = 600, height = 120, n = points.length || 1, bar = width / n;
  const total = (p) => series.reduce((sum, [key]) => sum + p[key], 0);
  const max = Math.max(1, ...points.map(total));
  svg.dataset.max = String(max);
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  points.forEach((p, i) => {
    let top = height;
    for (const [key, cls] of series) {
      const h = (p[key] / max) * (height - 10);
      if (h <= 0) continue;
      top -= h;
      const rect = document.createElementNS(ns, "rect");
      rect.setAttribute("x", String(i * bar + 1));
      rect.setAttribute("y", String(top));
      rect.setAttribute("width", String(Math.max(1, bar - 2)));
      rect.setAttribute("height", String(h));
      rect.setAttribute("class", cls);
      const title = document.createElementNS(ns, "title");
      title.textContent = describe(p);
      rect.append(title);
      svg.append(rect);
    }
  });
  return max;
}
const THROUGHPUT_SERIES = [["completed", "done"], ["failed", "failed"]];
const describeThroughput = (m) => new Date(m.minute).toLocaleTimeString() + ": " + m.completed + " completed, " + m.failed + " failed";
function refresh() {
  refreshJobLife();
  refreshFlows();
  return Promise.all([
    api("stats"),
    api("jobs?state=failed&limit=50"),
    api("jobs?state=pending&limit=50"),
    api("jobs?state=active&limit=50"),
    api("jobs?state=suspended&limit=50"),
    api("jobs?state=completed&limit=20"),
    api("schedules"),
    api("throughput?minutes=60"),
    api("queues"),
    api("instances"),
  ]).then(([stats, failed, pending, active, suspended, completed, schedules, throughput, queues, instances]) => {
    const t = stats.totals;
    for (const key of ["pending", "blocked", "due", "snoozed", "active", "completed", "failed", "cancelled"]) $("total-" + key).textContent = String(t[key]);
    $("total-oldest").textContent = secs(t.oldestPendingAgeSeconds);
    fill($("tasks"), stats.tasks, [(r) => findLink(r.task, { task: r.task }), (r) => r.pending, (r) => r.blocked, (r) => r.due, (r) => findLink(r.active, { task: r.task, state: "active" }), (r) => r.completed, (r) => r.failed, (r) => r.cancelled, (r) => r.snoozed, (r) => secs(r.oldestPendingAgeSeconds), (r) => el("button", { type: "button", "data-action": "retry-failed", text: "Retry all failed", onclick: () => retryFailed(r.task) })], "No jobs yet.");
    fill($("queues"), queues.queues, [(r) => findLink(r.name, { queue: r.name }), (r) => (r.paused ? "paused" : "running"), (r) => r.pending, (r) => r.blocked, (r) => r.due, (r) => findLink(r.active, { queue: r.name, state: "active" }), limits, queueButton], "No queues.", (r) => ({ "data-queue": r.name }));
    fill($("failed"), failed.jobs, [(r) => r.id, (r) => r.task, (r) => r.attempt, (r) => el("span", { class: "error-text", text: r.lastErrorPreview || "" }), (r) => at(r.completedAt), (r) => button("Retry", "retry", r.id)], "No failed jobs.");
    // Run now is offered while a job waits for its time: drawn again once a job's time has come.
    dependsOn($("pending"), pending.jobs.filter(waitsForItsTime).length);
    fill($("pending"), pending.jobs, [(r) => r.id, (r) => r.task, due, (r) => r.attempt, (r) => r.lastErrorPreview || "", (r) => el("span", {}, [waitsForItsTime(r) ? button("Run now", "run", r.id) : "", " ", button("Cancel", "cancel", r.id)])], "Nothing queued.");
    fill($("active"), active.jobs, [(r) => r.id, (r) => r.task, (r) => r.attempt, (r) => r.executedBy, (r) => at(r.startedAt), (r) => listedProgress(r.progressPreview), (r) => button("Cancel", "cancel", r.id)], "Nothing running.");
    fill($("suspended"), suspended.jobs, [(r) => r.id, (r) => r.task, (r) => (r.waitUntil ? when(r.waitUntil) : "when it is told"), (r) => r.attempt, (r) => button("Cancel", "cancel", r.id)], "No suspended jobs.");
    fill($("completed"), completed.jobs, [(r) => r.id, (r) => r.task, (r) => r.attempt, (r) => at(r.completedAt), (r) => r.startedAt && r.completedAt ? (new Date(r.completedAt) - new Date(r.startedAt)) + " ms" : "", (r) => el("code", { text: r.resultPreview ?? "" })], "No completed jobs.");
    fill($("schedules"), schedules.schedules, SCHEDULE_COLUMNS, "No schedules.", (r) => ({ "data-schedule": r.name }));
    fill($("instances"), instances.instances, [(r) => r.id, (r) => r.hostname || "", (r) => r.pid ?? "", (r) => at(r.startedAt), heartbeat, (r) => (r.concurrency === null ? String(r.running) : r.running + " of " + r.concurrency), runningJobs], "No instance is registered.", (r) => ({ "data-instance": r.id }));
    $("chart-max").textContent = "max " + chart($("chart"), throughput.minutes, THROUGHPUT_SERIES, describeThroughput) + "/min";
    depthQueues(queues.queues);
    $("updated").textContent = "Updated " + new Date().toLocaleTimeString();
  }).catch((err) => say("Cannot load: " + err.message, true));
}
const heartbeat = (r) => el("span", { class: r.alive ? "" : "error-text", text: Math.round(r.silentForSeconds) + " s ago" + (r.alive ? "" : " (presumed dead)") });
// The jobs an instance runs: each opens on a click, as a job's row does.
const runningJobs = (r) => el("span", {}, r.jobs.map((job) => el("button", { type: "button", class: "job-link", "data-job-id": job.id, title: "Job " + job.id, text: job.task + " " + job.id.slice(0, 13) + "…" })));
const snoozes = (n) => (n > 1 ? " (" + n + " snoozes)" : "");
const due = (r) => (r.snoozedUntil ? "snoozed until " + when(r.snoozedUntil) + snoozes(r.snoozes) : when(r.waitUntil));
const badge = (state) => el("span", { class: "state state-" + state, text: state });
function refreshJobLife() {
  if (shownJob) showJob(shownJob);
  return api("jobs?state=cancelled&limit=20")
    .then((cancelled) => fill($("cancelled"), cancelled.jobs, [(r) => r.id, (r) => r.task, (r) => r.attempt, (r) => at(r.completedAt), (r) => button("Retry", "retry", r.id)], "No cancelled jobs."))
    .catch((err) => say("Cannot load: " + err.message, true));
}
// The job shown in the dialog, kept up to date by each refresh until the dialog is closed.
let shownJob = "";
function showJob(id) {
  shownJob = id;
  return api("jobs/" + id).then(renderJob).catch((err) => say("Cannot load job " + id + ": " + err.message, true));
}
// The answer the open dialog shows: the same one again (a 304) leaves it as it is, focus included.
let shownAnswer = null;
function renderJob(answer) {
  const { job, history, attempts, cronSlot } = answer;
  if (job.id !== shownJob || ($("job").open && answer === shownAnswer)) return;
  shownAnswer = answer;
  const row = (label, value) => el("tr", { "data-field": label }, [el("th", { text: label }), el("td", {}, [value instanceof Node ? value : String(value ?? "")])]);
  const full = (value) => el("pre", { text: JSON.stringify(value, null, 2) });
  const rows = [row("Task", job.task), row("State", badge(job.state)), row("Attempts", job.attempt + " of " + (job.maxRetries + 1)), row("Created", when(job.createdAt)), row("Started", when(job.startedAt))];
  if (job.state === "pending") {
    // History describes the attempt before this wait, if there was one: a failure, or a snooze.
    const snoozed = history && history.state === "snoozed";
    rows.push(row("Due", snoozed ? "snoozed until " + when(job.waitUntil) + snoozes(history.snoozes) : when(job.waitUntil)));
    if (history) rows.push(row("Last attempt", el("span", {}, [badge(history.state), " " + when(history.completedAt)])));
  } else if (job.completedAt) {
    rows.push(row(job.state === "cancelled" ? "Cancelled at" : "Ended at", when(job.completedAt)));
  }
  if (history && history.snoozes > 0) rows.push(row("Snoozed", history.snoozes === 1 ? "once" : history.snoozes + " times"));
  if (job.waitingFor) rows.push(row("Waits for", waitingFor(job.waitingFor)));
  if (job.steps && job.steps.length > 0) rows.push(row("Steps", stepTimeline(job.steps)));
  rows.push(row("Queue", job.queue + (job.groupKey ? ", group " + job.groupKey : "")));
  if (job.uniqueKey !== null && job.uniqueKey !== undefined) rows.push(row("Unique key", job.uniqueKey));
  if (cronSlot) rows.push(row("Schedule", el("span", {}, ["From schedule " + cronSlot.schedule + ", slot ", at(cronSlot.slot)])));
  // A flow's job opens its flow: every job of it, with what each depends on.
  if (job.flowId) rows.push(row("Flow", el("button", { type: "button", class: "flow-link", text: job.flowId, onclick: () => { $("job").close(); showFlow(job.flowId).then(() => $("flow").scrollIntoView()); } })));
  const log = attemptLog(attempts, history);
  if (log) rows.push(row("Attempt log", log));
  if (job.executedBy) rows.push(row("Instance", job.executedBy));
  if (job.lastErrorMessage) rows.push(row("Last error", el("span", { class: "error-text", text: job.lastErrorMessage })));
  if (job.progress !== null) rows.push(row("Progress", progress(job.progress)));
  rows.push(row("Payload", full(job.payload)), row("Result", job.result === null ? "none" : full(job.result)));
  $("job-title").textContent = "Job " + job.id;
  $("job-fields").replaceChildren(...rows);
  $("job-actions").replaceChildren(...jobActions(job));
  $("job-snippet").textContent = "await queue.getJob('" + job.id + "');";
  if (!$("job").open) $("job").showModal();
}
// What can be done to the job in its state, as the lists offer it.
function jobActions(job) {
  const actions = [];
  if (RETRYABLE_STATES.includes(job.state)) actions.push(button("Retry", "retry", job.id));
  if (waitsForItsTime(job)) actions.push(button("Run now", "run", job.id));
  if (CANCELLABLE_STATES.includes(job.state)) actions.push(button("Cancel", "cancel", job.id));
  return actions.flatMap((action) => [action, " "]);
}
// Every attempt that ended or runs: each one that ended without completing as recorded (failed,
// interrupted, snoozed, cancelled: the next claim overwrites history), then the last from history
// unless it is one of those. Matched by start, since interrupted and snoozed attempts reuse numbers.
function attemptLog(attempts, history) {
  const lines = attempts.slice();
  const startOf = (time) => new Date(time).getTime();
  if (history && history.startedAt && !attempts.some((a) => startOf(a.startedAt) === startOf(history.startedAt))) {
    const failing = history.state === "failed" || history.state === "interrupted";
    lines.push({ attempt: history.attempt, outcome: history.state, executedBy: history.executedBy, startedAt: history.startedAt, endedAt: history.completedAt, error: failing ? history.lastErrorMessage : null, stack: null });
  }
  if (lines.length === 0) return null;
  const took = (a) => (a.startedAt && a.endedAt ? (new Date(a.endedAt) - new Date(a.startedAt)) + " ms" : "");
  const error = (a) => el("span", {}, [
    el("span", { class: "error-text", text: a.error || "" }),
    a.stack ? el("details", {}, [el("summary", { text: "stack" }), el("pre", { text: a.stack })]) : "",
  ]);
  const body = document.createElement("tbody");
  fill(body, lines, [(a) => a.attempt, (a) => badge(a.outcome), (a) => a.executedBy || "", (a) => at(a.startedAt), (a) => at(a.endedAt), took, error], "", (a) => ({ "data-attempt": String(a.attempt), "data-outcome": a.outcome }));
  const head = el("tr", {}, ["Attempt", "Outcome", "Instance", "Started", "Ended", "Took", "Error"].map((label) => el("th", { text: label })));
  return el("table", { class: "attempts" }, [el("thead", {}, [head]), body]);
}
// What a suspended job waits for, as text.
function waitingFor(wait) {
  if (wait.jobs) return wait.jobs.length + " job(s) to end: " + wait.jobs.join(", ");
  const until = wait.until ? "until " + when(wait.until) : "with no timeout";
  return wait.event !== undefined ? "event " + JSON.stringify(wait.event) + ", " + until : "its sleep, " + until;
}
// A job's durable steps in the order of their first calls: state, start, and how long each took.
function stepTimeline(steps) {
  return el("ol", { class: "steps" }, steps.map((step) => el("li", { "data-step": step.name }, [
    el("code", { text: step.name }), " ", badge(step.state), " " + when(step.startedAt),
    step.endedAt ? " (" + (new Date(step.endedAt) - new Date(step.startedAt)) + " ms)" : "",
    step.error ? el("span", { class: "error-text", text: " " + step.error }) : "",
  ])));
}
$("job-close").addEventListener("click", () => $("job").close());
// The page's own origin is a secure context on localhost and behind HTTPS, where the clipboard works.
$("job-copy").addEventListener("click", () => {
  const copying = navigator.clipboard ? navigator.clipboard.writeText($("job-snippet").textContent) : Promise.reject(new Error("no clipboard here"));
  copying.then(() => say("Copied.")).catch((err) => say("Cannot copy: " + err.message + "; select the text instead.", true));
});
$("job").addEventListener("close", () => { shownJob = ""; });
// A click on a job's link, or on its row (not on its buttons), shows the job, whichever list it
// is in; so does Enter on a row, which Tab reaches.
document.addEventListener("click", (event) => {
  const link = event.target.closest("button.job-link");
  const row = event.target.closest("tr[data-job-id]");
  if (link) showJob(link.dataset.jobId);
  else if (row && row.dataset.jobId && !event.target.closest("button")) showJob(row.dataset.jobId);
});
document.addEventListener("keydown", (event) => {
  const row = event.target.closest && event.target.closest("tr[data-job-id]");
  if (event.key === "Enter" && row === event.target && row.dataset.jobId) showJob(row.dataset.jobId);
});
${FLOWS_SCRIPT}
${SCHEDULES_SCRIPT}
${SEARCH_SCRIPT}
${DEPTH_SCRIPT}
// The tasks an instance runs change only with a deploy: read once.
function schemaOf(r) {
  if (!r.payloadJsonSchema) return "none";
  return el("details", {}, [el("summary", { text: "JSON Schema" }), el("pre", { text: JSON.stringify(r.payloadJsonSchema, null, 2) })]);
}
api("tasks")
  .then((body) => fill($("task-list"), body.tasks, [(r) => r.name, (r) => r.queue, (r) => (r.worker ? "worker thread" : "in-process"), (r) => r.cron || "", schemaOf], "No tasks on this instance.", (r) => ({ "data-task": r.name })))
  .catch((err) => say("Cannot load the tasks: " + err.message, true));
// How long each task's jobs took, over the last hour or the last day: heavier than the counts,
// so every 30 s, and at once when the window changes. A day's percentiles come from per-minute
// buckets (within 10 %), marked "≈".
const ms = (value) => (value === undefined ? "" : value < 1000 ? Math.round(value) + " ms" : (value / 1000).toFixed(1) + " s");
const durationsWindow = () => Number(document.querySelector('input[name="durations-window"]:checked').value);
function refreshDurations() {
  const minutes = durationsWindow();
  return api("durations?minutes=" + minutes)
    .then((body) => {
      if (minutes !== durationsWindow()) return;
      const about = body.percentiles === "buckets" ? "≈ " : "";
      const pct = (value) => (value === undefined ? "" : about + ms(value));
      const label = minutes > 60 ? "the last day" : "the last hour";
      $("durations-window-label").textContent = label;
      fill($("durations"), body.tasks, [(r) => findLink(r.task, { task: r.task }), (r) => r.completed, (r) => r.failed, (r) => (r.failureRate * 100).toFixed(1) + " %", (r) => pct(r.durationMs?.p50), (r) => pct(r.durationMs?.p95), (r) => pct(r.durationMs?.p99)], "No job ended in " + label + ".", (r) => ({ "data-task": r.task }));
    })
    .catch((err) => say("Cannot load the durations: " + err.message, true));
}
for (const input of document.querySelectorAll('input[name="durations-window"]')) input.addEventListener("change", refreshDurations);
// A viewer who may only look gets a page without actions (the API refuses them anyway).
api("access")
  .then(({ readOnly }) => {
    document.body.classList.toggle("read-only", readOnly);
    $("mode").textContent = readOnly ? " · read-only: you may look, not act" : "";
  })
  .catch((err) => say("Cannot load: " + err.message, true));
refresh();
refreshDurations();
// The per-minute figures change once a minute: read every 30 s at most.
setInterval(() => { if (!document.hidden) { refreshDurations(); refreshDepth(); } }, 30000);
// A tab in the background asks nothing: an operator's forgotten tabs do not load the database.
setInterval(() => { if (!document.hidden) refresh(); }, 2000);
document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
`;

const STYLE = `
:root { color-scheme: light dark; --fg: #1d2330; --bg: #fff; --line: #d6dae3; --soft: #eceef3; --head: #f6f7f9;
  --muted: #5d6270; --bad: #b3261e; --good: #2e7d32; --panel: #fafbfc; --snoozed-bg: #e8eaf6; --snoozed: #283593;
  --waiting-bg: #e0f2f1; --waiting: #00695c; --blocked-bg: #fff3e0; --blocked: #8a4b00; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e3e6ee; --bg: #15181e; --line: #3a404c; --soft: #2a2f39; --head: #20242c; --muted: #a3a9b6;
    --bad: #ff8a80; --good: #81c784; --panel: #1b1f26; --snoozed-bg: #283046; --snoozed: #b4bef5;
    --waiting-bg: #16332f; --waiting: #80cbc4; --blocked-bg: #3a2a12; --blocked: #ffcc80; }
}
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; color: var(--fg); background: var(--bg); }
dialog { color: var(--fg); background: var(--bg); }
@media (max-width: 40rem) {
  body { margin: 0 .6rem 1rem; } table { display: block; overflow-x: auto; } .axis, svg.minute-chart { width: 100%; }
  #search input, #search select { min-width: 0; width: 100%; } #search label { flex: 1 1 45%; }
}
h1 { font-size: 1.3rem; margin: 1rem 0 .25rem; } h2 { font-size: 1.05rem; margin: 1.5rem 0 .4rem; }
.cards { display: flex; gap: .75rem; flex-wrap: wrap; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .9rem; min-width: 7rem; }
.card b { display: block; font-size: 1.4rem; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--soft); vertical-align: top; }
th { font-weight: 600; background: var(--head); } td.empty { color: var(--muted); font-style: italic; }
.error-text, .error { color: var(--bad); } #note { min-height: 1.2rem; margin: .5rem 0; }
svg rect.done { fill: var(--good); } svg rect.failed { fill: var(--bad); } svg { background: var(--panel); border: 1px solid var(--soft); }
button { cursor: pointer; } small { color: var(--muted); }
.axis { display: flex; justify-content: space-between; width: 600px; color: var(--muted); font-size: .8rem; }
.legend-done { color: var(--good); } .legend-failed { color: var(--bad); }
tr[data-job-id]:not([data-job-id=""]), .job-link, .flow-link { cursor: pointer; } .job-link, .flow-link { font: inherit; color: inherit; background: none; border: 0; padding: 0 .4rem 0 0; text-decoration: underline dotted; }
tr[data-job-id]:focus-visible { outline: 2px solid var(--fg); outline-offset: -2px; } tr[data-job-id]:not([data-job-id=""]):hover { background: var(--head); }
td code { word-break: break-all; } dialog { width: min(60rem, 90vw); border: 1px solid var(--line); border-radius: 6px; }
dialog th { width: 8rem; } table.attempts th { width: auto; } pre { margin: 0; white-space: pre-wrap; word-break: break-all; max-height: 20rem; overflow: auto; }
.state { padding: 0 .4rem; border-radius: 3px; background: var(--soft); } .state-completed { color: var(--good); }
.state-failed, .state-interrupted { color: var(--bad); } .state-cancelled { background: #5f6368; color: #fff; }
.state-snoozed { background: var(--snoozed-bg); color: var(--snoozed); }
.state-suspended, .state-running { background: var(--waiting-bg); color: var(--waiting); } ol.steps { margin: 0; padding-left: 1.2rem; }
.read-only [data-action], .read-only [data-queue-action], .read-only [data-flow-action], .read-only .bulk { display: none !important; }
${FLOWS_STYLE}${SCHEDULES_STYLE}${SEARCH_STYLE}${DEPTH_STYLE}`;

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Jobs dashboard</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<h1>Jobs</h1>
<small id="updated">Loading…</small><small id="mode"></small>
<div id="note" role="status"></div>
${SEARCH_HTML}<div class="cards">
  <div class="card">Pending<b id="total-pending">-</b></div>
  <div class="card">Blocked in flows<b id="total-blocked">-</b></div>
  <div class="card">Due<b id="total-due">-</b></div>
  <div class="card">Active<b id="total-active">-</b></div>
  <div class="card">Completed, last 60 min<b id="total-completed">-</b></div>
  <div class="card">Failed, last 60 min<b id="total-failed">-</b></div>
  <div class="card">Cancelled, last 60 min<b id="total-cancelled">-</b></div>
  <div class="card">Snoozed<b id="total-snoozed">-</b></div>
  <div class="card">Oldest due job waiting<b id="total-oldest">-</b></div>
</div>
<h2>Throughput, last 60 minutes <small><span class="legend-done">completed</span> / <span class="legend-failed">failed</span> per minute, <span id="chart-max"></span></small></h2>
<svg id="chart" class="minute-chart" viewBox="0 0 600 120" width="600" height="120" role="img" aria-label="Jobs ended per minute"></svg>
<div class="axis"><span>60 min ago</span><span>now</span></div>
<h2>By task <small>(completed, failed and cancelled: last 60 minutes)</small></h2>
<table><thead><tr><th>Task</th><th>Pending</th><th>Blocked</th><th>Due</th><th>Active</th><th>Completed</th><th>Failed</th><th>Cancelled</th><th>Snoozed</th><th>Oldest due</th><th></th></tr></thead><tbody id="tasks"></tbody></table>
<h2 id="durations-title">Durations by task <small>(jobs that ended in <span id="durations-window-label">the last hour</span>; from start to end of the completed ones)</small></h2>
<fieldset class="window-toggle" aria-describedby="durations-title"><legend>Window</legend>
  <label><input type="radio" name="durations-window" value="60" checked> last hour</label>
  <label><input type="radio" name="durations-window" value="1440"> last day</label>
</fieldset>
<table><thead><tr><th>Task</th><th>Completed</th><th>Failed</th><th>Failure rate</th><th>p50</th><th>p95</th><th>p99</th></tr></thead><tbody id="durations"></tbody></table>
<h2>Tasks <small>(those this instance runs; the payload a producer sends, where its schema gives a JSON Schema)</small></h2>
<table><thead><tr><th>Task</th><th>Queue</th><th>Runs</th><th>Cron</th><th>Payload</th></tr></thead><tbody id="task-list"></tbody></table>
<h2>Queues <small>(limits as this instance has them configured)</small></h2>
<table><thead><tr><th>Queue</th><th>State</th><th>Pending</th><th>Blocked</th><th>Due</th><th>Active</th><th>Limits</th><th></th></tr></thead><tbody id="queues"></tbody></table>
${DEPTH_HTML}${FLOWS_HTML}<h2>Failed</h2>
<table><thead><tr><th>Job</th><th>Task</th><th>Attempts</th><th>Error</th><th>Failed at</th><th></th></tr></thead><tbody id="failed"></tbody></table>
<h2>Pending</h2>
<table><thead><tr><th>Job</th><th>Task</th><th>Due</th><th>Attempts</th><th>Last error</th><th></th></tr></thead><tbody id="pending"></tbody></table>
<h2>Running</h2>
<table><thead><tr><th>Job</th><th>Task</th><th>Attempt</th><th>Instance</th><th>Started</th><th>Progress</th><th></th></tr></thead><tbody id="active"></tbody></table>
<h2>Suspended <small>(durable steps: sleeping, or waiting for an event or for jobs)</small></h2>
<table><thead><tr><th>Job</th><th>Task</th><th>Resumes</th><th>Attempt</th><th></th></tr></thead><tbody id="suspended"></tbody></table>
<h2>Recently completed <small>(click a job for its whole result and its details)</small></h2>
<table><thead><tr><th>Job</th><th>Task</th><th>Attempts</th><th>Completed at</th><th>Took</th><th>Result</th></tr></thead><tbody id="completed"></tbody></table>
<h2>Recently cancelled</h2>
<table><thead><tr><th>Job</th><th>Task</th><th>Attempts</th><th>Cancelled at</th><th></th></tr></thead><tbody id="cancelled"></tbody></table>
<h2>Instances <small>(registered; what each runs now, its first twenty jobs)</small></h2>
<table><thead><tr><th>Instance</th><th>Host</th><th>PID</th><th>Started</th><th>Last heartbeat</th><th>Running (of its concurrency)</th><th>Jobs</th></tr></thead><tbody id="instances"></tbody></table>
${SCHEDULES_HTML}<dialog id="job" aria-labelledby="job-title"><h2 id="job-title"></h2><p id="job-actions"></p><table><tbody id="job-fields"></tbody></table>
<p><code id="job-snippet"></code> <button type="button" id="job-copy">Copy</button></p><p><button type="button" id="job-close">Close</button></p></dialog>
<script>${SCRIPT}</script>
</body>
</html>
`;

const hash = (text: string) => createHash('sha256').update(text).digest('base64');

/** Only this page's own script and style may run, and it may only talk to its own origin. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${hash(SCRIPT)}'`,
  `style-src 'sha256-${hash(STYLE)}'`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
