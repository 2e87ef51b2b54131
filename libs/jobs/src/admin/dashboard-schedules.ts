/**
 * The dashboard's Schedules section: each schedule with its next run (the next three on hover),
 * its last runs as state badges that open their jobs, and _Pause_ / _Resume_ and _Run now_. Its
 * script runs inside the page's one script (`dashboard.page.ts`) and uses its helpers (`el`,
 * `at`, `when`, `json`, `act`); like the rest of the page, it inserts every value as text.
 */
export const SCHEDULES_SCRIPT = String.raw`
const SCHEDULE_DONE = { pause: " paused.", resume: " resumed.", trigger: " triggered: one run now." };
function scheduleButton(label, action, name) {
  return el("button", { type: "button", "data-action": action, text: label, onclick: () => act("schedules/" + encodeURIComponent(name) + "/" + action, "Schedule " + name + SCHEDULE_DONE[action]) });
}
const scheduleButtons = (r) => el("span", {}, [r.paused ? scheduleButton("Resume", "resume", r.name) : scheduleButton("Pause", "pause", r.name), document.createTextNode(" "), scheduleButton("Run now", "trigger", r.name)]);
// A time in the viewer's zone and in UTC, for a title.
const bothZones = (value) => when(value) + " (" + new Date(value).toISOString().slice(0, 19).replace("T", " ") + " UTC)";
// The next run, and the next three on hover of "+2".
function nextRunsCell(r) {
  if (r.paused) return "paused";
  if (r.nextRuns.length === 0) return "none";
  const more = r.nextRuns.length - 1;
  return el("span", { "data-next-runs": String(r.nextRuns.length) }, [
    at(r.nextRuns[0]),
    more > 0 ? el("small", { class: "more-runs", title: "Next runs: " + r.nextRuns.map(bothZones).join(", "), text: " +" + more }) : "",
  ]);
}
// The latest slots, latest first: each a badge of its job's state that opens the job. A skipped
// slot did not run: it is shown as missed. A job whose record is gone has nothing to open.
function lastRunsCell(r) {
  if (r.lastRuns.length === 0) return "none yet";
  return el("span", { class: "last-runs" }, r.lastRuns.map((run) => {
    const missed = run.state === "skipped";
    const label = run.state === null ? "gone" : missed ? "missed" : run.state;
    const title = "Slot " + bothZones(run.slot) + ": " + (missed ? "skipped (missed its slot, or a run of its schedule was active)" : run.state === null ? "its job's record is gone" : run.state);
    const attrs = { class: "state state-" + (run.state || "gone") + (missed ? " missed" : ""), "data-slot-state": run.state || "gone", title, text: label };
    return run.state === null ? el("span", attrs) : el("button", Object.assign(attrs, { type: "button", class: attrs.class + " job-link run", "data-job-id": run.jobId }));
  }));
}
const SCHEDULE_COLUMNS = [(r) => r.name, (r) => r.task, (r) => r.cron, (r) => r.timezone, (r) => r.overlap, nextRunsCell, lastRunsCell, (r) => json(r.payload), scheduleButtons];
`;

export const SCHEDULES_HTML = `<h2>Schedules <small>(last runs: latest first; click one for its job)</small></h2>
<table><thead><tr><th>Name</th><th>Task</th><th>Cron</th><th>Time zone</th><th>Overlap</th><th>Next run</th><th>Last runs</th><th>Payload</th><th></th></tr></thead><tbody id="schedules"></tbody></table>
`;

export const SCHEDULES_STYLE = `
.last-runs { display: inline-flex; gap: .25rem; flex-wrap: wrap; } .job-link.run { text-decoration: none; padding: 0 .4rem; }
.state.missed { color: var(--bad); border: 1px dashed var(--bad); } .more-runs { cursor: help; }
`;
