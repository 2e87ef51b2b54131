/**
 * The dashboard's Flows section: the latest flows with their progress, and the flow an operator
 * clicks on, its jobs with their dependencies and states, with Retry flow and Cancel flow (each
 * confirmed first). Its script runs inside the page's one script (`dashboard.page.ts`) and uses its
 * helpers (`api`, `el`, `fill`, `say`, `badge`, `at`); like the rest of the page, it inserts
 * every value as text.
 */
export const FLOWS_SCRIPT = String.raw`
// The states in the order a job goes through them, for a flow's counts.
const FLOW_STATES = ["blocked", "pending", "active", "suspended", "completed", "failed", "interrupted", "cancelled", "skipped"];
const flowLabel = (flow) => flow.name || flow.flowId;
// A flow may have 10,000 jobs: the page draws its first ones, and says how many it leaves out.
const SHOWN_FLOW_JOBS = 200;
const flowCounts = (counts) => FLOW_STATES.filter((state) => counts[state]).map((state) => state + " " + counts[state]).join(", ");
function flowProgress(flow) {
  const done = flow.counts.completed || 0;
  const bar = el("progress", { max: String(Math.max(1, flow.jobCount)), value: String(done) });
  return el("span", {}, [bar, document.createTextNode(" " + done + "/" + flow.jobCount + " completed")]);
}
function flowAction(action, flow) {
  const verb = action === "retry" ? "Retry" : "Cancel";
  if (!confirm(verb + " flow " + flowLabel(flow) + "?")) return Promise.resolve();
  return api("flows/" + flow.flowId + "/" + action, { method: "POST", headers: { "X-Jobs-Admin": "1" } })
    .then((body) => {
      say(action === "retry"
        ? "Flow " + flowLabel(flow) + ": " + body.retried + " job(s) queued again."
        : "Flow " + flowLabel(flow) + ": " + body.cancelled + " job(s) cancelled.");
      return refresh();
    })
    .catch((err) => say(err.message, true));
}
// The flow shown under the list, kept up to date by each refresh until it is closed.
let shownFlow = "";
// The answer the open flow shows: the same one again (a 304) leaves it as it is.
let shownFlowAnswer = null;
function showFlow(id) {
  shownFlow = id;
  return api("flows/" + id).then((answer) => {
    const { flow } = answer;
    if (flow.flowId !== shownFlow || (!$("flow").hidden && answer === shownFlowAnswer)) return;
    shownFlowAnswer = answer;
    $("flow-title").textContent = "Flow " + flowLabel(flow) + " (" + flow.flowId + ")";
    $("flow-state").replaceChildren(badge(flow.state), " ", flowProgress(flow), " (" + flowCounts(flow.counts) + ")");
    const more = flow.jobs.length - SHOWN_FLOW_JOBS;
    $("flow-more").textContent = more > 0 ? "and " + more + " more job(s), not shown" : "";
    fill($("flow-jobs"), flow.jobs.slice(0, SHOWN_FLOW_JOBS), [(r) => r.ref, (r) => r.id, (r) => r.task, (r) => badge(r.state), (r) => r.dependsOn.join(", ") || "none"], "No jobs.");
    $("flow-retry").onclick = () => flowAction("retry", flow);
    $("flow-cancel").onclick = () => flowAction("cancel", flow);
    $("flow").hidden = false;
  }).catch((err) => say("Cannot load flow " + id + ": " + err.message, true));
}
function refreshFlows() {
  if (shownFlow) showFlow(shownFlow);
  return api("flows?limit=10")
    .then((body) => fill($("flows"), body.flows, [(r) => r.name || "", (r) => at(r.createdAt), flowProgress, (r) => badge(r.state), (r) => flowCounts(r.counts)], "No flows.", (r) => ({ "data-flow-id": r.flowId })))
    .catch((err) => say("Cannot load the flows: " + err.message, true));
}
$("flow-close").addEventListener("click", () => { shownFlow = ""; $("flow").hidden = true; });
document.addEventListener("click", (event) => {
  const row = event.target.closest("tr[data-flow-id]");
  if (row) showFlow(row.dataset.flowId);
});
`;

export const FLOWS_HTML = `
<h2>Flows <small>(latest first; click a flow for its jobs)</small></h2>
<table><thead><tr><th>Name</th><th>Created</th><th>Progress</th><th>State</th><th>Jobs by state</th></tr></thead><tbody id="flows"></tbody></table>
<section id="flow" hidden>
<h3 id="flow-title"></h3>
<p id="flow-state"></p>
<p><button type="button" id="flow-retry" data-flow-action="retry">Retry flow</button> <button type="button" id="flow-cancel" data-flow-action="cancel">Cancel flow</button> <button type="button" id="flow-close">Close</button></p>
<table><thead><tr><th>Ref</th><th>Job</th><th>Task</th><th>State</th><th>Depends on</th></tr></thead><tbody id="flow-jobs"></tbody></table>
<small id="flow-more"></small>
</section>
`;

export const FLOWS_STYLE = `
tr[data-flow-id] { cursor: pointer; } tr[data-flow-id]:hover { background: var(--head); }
#flow { border: 1px solid var(--line); border-radius: 6px; padding: 0 .9rem .6rem; margin-top: .6rem; }
h3 { font-size: 1rem; margin: .6rem 0 .3rem; } .state-blocked { background: var(--blocked-bg); color: var(--blocked); }
`;
