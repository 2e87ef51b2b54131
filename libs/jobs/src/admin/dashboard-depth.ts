/**
 * The dashboard's queue depth chart, under the Queues table: one queue's depth at the end of each
 * minute (`GET api/queues/:name/depth`), over the last hour or the last 24 h, drawn by the page's
 * `chart` (the throughput chart's). The figures change once a minute: the chart is read every
 * 30 s at most, not while the tab is hidden, and at once when the queue or the window changes.
 * Its script runs inside the page's one script (`dashboard.page.ts`) and uses its helpers (`el`,
 * `$`, `api`, `say`, `chart`); like the rest of the page, it inserts every value as text.
 */
export const DEPTH_SCRIPT = String.raw`
// Bars stacked from the bottom: running, due, queued for later, blocked in flows.
const DEPTH_SERIES = [["active", "depth-active"], ["due", "depth-due"], ["later", "depth-later"], ["blocked", "depth-blocked"]];
const depthWindow = () => Number(document.querySelector('input[name="depth-window"]:checked').value);
// The window in bins (a minute each over an hour, ten minutes each over a day), each the depth at
// the end of the last minute written in it; a bin no instance wrote stays empty (no bar).
function depthBins(points, minutes) {
  const span = (minutes > 60 ? 10 : 1) * 60000, count = Math.ceil(minutes / (span / 60000));
  const first = Math.floor(Date.now() / 60000) * 60000 - (count - 1) * span;
  const bins = Array.from({ length: count }, (_, i) => ({ minute: new Date(first + i * span).toISOString(), active: 0, due: 0, later: 0, blocked: 0, pending: 0, empty: true }));
  for (const point of points) {
    const i = Math.floor((new Date(point.minute).getTime() - first) / span);
    if (i >= 0 && i < count) bins[i] = Object.assign({}, point, { later: point.pending - point.due });
  }
  return bins;
}
function describeDepth(p) {
  if (p.empty) return new Date(p.minute).toLocaleTimeString() + ": not recorded";
  return "End of " + new Date(p.minute).toLocaleTimeString() + ": " + p.pending + " pending (" + p.due + " due), " + p.blocked + " blocked, " + p.active + " running";
}
let depthQueue = "";
function refreshDepth() {
  const queue = depthQueue, minutes = depthWindow();
  if (!queue) return Promise.resolve();
  return api("queues/" + encodeURIComponent(queue) + "/depth?minutes=" + minutes)
    .then((body) => {
      if (queue !== depthQueue || minutes !== depthWindow()) return;
      const label = minutes > 60 ? "the last 24 hours" : "the last hour";
      const svg = $("depth-chart");
      svg.setAttribute("aria-label", "Depth of queue " + queue + " at the end of each minute, over " + label);
      svg.dataset.points = String(body.points.length);
      const max = chart(svg, depthBins(body.points, minutes), DEPTH_SERIES, describeDepth);
      $("depth-max").textContent = "max " + max + " jobs";
      $("depth-start").textContent = minutes > 60 ? "24 h ago" : "60 min ago";
      $("depth-note").textContent = body.points.length === 0 ? "No minute recorded for " + queue + " in " + label + ": an instance that runs jobs records each queue's depth once a minute." : "";
    })
    .catch((err) => say("Cannot load the depth of " + queue + ": " + err.message, true));
}
// The queues the chart can show: those of the Queues table, kept in step with it.
function depthQueues(queues) {
  const select = $("depth-queue"), names = queues.map((q) => q.name);
  if (select.options.length === names.length && names.every((name, i) => select.options[i].value === name)) return;
  select.replaceChildren(...names.map((name) => el("option", { value: name, text: name })));
  if (names.includes(depthQueue)) select.value = depthQueue;
  else { depthQueue = names[0] || ""; refreshDepth(); }
}
$("depth-queue").addEventListener("change", (event) => { depthQueue = event.target.value; refreshDepth(); });
for (const input of document.querySelectorAll('input[name="depth-window"]')) input.addEventListener("change", refreshDepth);
`;

export const DEPTH_HTML = `<h3 id="depth-title">Depth <small>(at the end of each minute: <span class="legend-depth-active">running</span> / <span class="legend-depth-due">due</span> / <span class="legend-depth-later">queued for later</span> / <span class="legend-depth-blocked">blocked</span>, <span id="depth-max"></span>)</small></h3>
<div class="depth-controls" role="group" aria-labelledby="depth-title">
  <label>Queue <select id="depth-queue"></select></label>
  <fieldset><legend>Window</legend>
    <label><input type="radio" name="depth-window" value="60" checked> last hour</label>
    <label><input type="radio" name="depth-window" value="1440"> last 24 h</label>
  </fieldset>
</div>
<svg id="depth-chart" class="minute-chart" viewBox="0 0 600 120" width="600" height="120" role="img" aria-label="Queue depth per minute"></svg>
<div class="axis"><span id="depth-start">60 min ago</span><span>now</span></div>
<p id="depth-note" class="depth-note"></p>
`;

export const DEPTH_STYLE = `
h3 { font-size: .95rem; margin: 1rem 0 .3rem; } .depth-controls { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; margin-bottom: .3rem; }
.depth-controls fieldset, .window-toggle { border: 0; padding: 0; margin: 0; display: inline-flex; gap: .6rem; align-items: center; }
.depth-controls legend, .window-toggle legend { float: left; padding-right: .4rem; } .depth-note { color: var(--muted); min-height: 1rem; margin: .2rem 0; }
svg rect.depth-active { fill: var(--waiting); } svg rect.depth-due { fill: var(--snoozed); } svg rect.depth-later { fill: var(--muted); }
svg rect.depth-blocked { fill: var(--blocked); } .legend-depth-active { color: var(--waiting); } .legend-depth-due { color: var(--snoozed); }
.legend-depth-later { color: var(--muted); } .legend-depth-blocked { color: var(--blocked); }
`;
