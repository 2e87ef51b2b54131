import { LISTED_STATES } from './admin-input.js';

/**
 * The dashboard's Find section: jobs searched by state, task, queue, group, unique key (exactly),
 * error text, id (or its start), flow and creation time, a page at a time (`GET api/jobs` with its cursor), counted
 * (`GET api/jobs/count`), and retried, cancelled or deleted all at once by the same filter after a
 * confirmation that states the count. The search is in the page's address, so a link to it can be
 * shared. Its script runs inside the page's one script (`dashboard.page.ts`) and uses its helpers
 * (`api`, `el`, `fill`, `say`, `badge`, `at`, `refresh`, `RETRYABLE_STATES`, `CANCELLABLE_STATES`,
 * `DELETABLE_STATES`); every value is inserted as text. The page's other tables link a task's or a
 * queue's name and counts to their jobs here (`findLink`).
 */
export const SEARCH_SCRIPT = String.raw`
const SEARCH_FIELDS = ["state", "task", "queue", "groupKey", "uniqueKey", "error", "id", "flow", "after", "before"];
// The fields a bulk retry, cancel or delete takes: a search by id or flow is for finding, not acting.
const BULK_FIELDS = ["task", "queue", "groupKey", "uniqueKey", "error", "after", "before"];
const BULK = {
  retry: { states: RETRYABLE_STATES, verb: "Retry", done: (body) => body.retried + " job(s) queued again." },
  cancel: { states: CANCELLABLE_STATES, verb: "Cancel", done: (body) => body.cancelled + " job(s) cancelled." },
  // The count is the search's: a flow's jobs are in it, and the delete leaves them (they go with their flow).
  delete: {
    states: DELETABLE_STATES, verb: "Delete", done: (body) => body.deleted + " job(s) deleted.",
    note: " Jobs of a flow are kept: they go with their flow. A deleted job cannot be brought back.",
  },
};
const searchForm = $("search");
// The search as shown in the address: only the fields given, times as ISO 8601 in UTC.
function searchParams() {
  const params = new URLSearchParams();
  for (const name of SEARCH_FIELDS) {
    // A unique key is matched exactly, spaces included: it is not trimmed.
    const value = name === "uniqueKey" ? searchForm.elements[name].value : searchForm.elements[name].value.trim();
    if (!value) continue;
    params.set(name, name === "after" || name === "before" ? new Date(value).toISOString() : value);
  }
  return params;
}
// A datetime-local field shows the viewer's own time: an ISO time from a link is turned into it.
function localInput(iso) {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return "";
  return new Date(time.getTime() - time.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}
function fillSearchForm(params) {
  for (const name of SEARCH_FIELDS) {
    const value = params.get(name) || "";
    searchForm.elements[name].value = name === "after" || name === "before" ? localInput(value) : value;
  }
}
let searched = null;
let nextPage = null;
function search(params) {
  searched = params;
  nextPage = null;
  $("search-results").replaceChildren();
  $("search-found").hidden = false;
  return Promise.all([loadPage(), countMatches()]);
}
const searchColumns = [
  (r) => r.id, (r) => r.task, (r) => badge(r.state), (r) => r.queue || "", (r) => r.attempt,
  (r) => at(r.completedAt || r.startedAt || r.createdAt),
  (r) => el("span", { class: "error-text", text: r.lastErrorPreview || "" }),
];
function loadPage() {
  const params = new URLSearchParams(searched);
  params.set("limit", "50");
  if (nextPage) params.set("cursor", nextPage);
  return api("jobs?" + params).then((body) => {
    const rows = $("search-results");
    const first = rows.children.length === 0;
    const page = document.createElement("tbody");
    fill(page, body.jobs, searchColumns, "No job matches.");
    if (first || body.jobs.length > 0) rows.append(...page.children);
    nextPage = body.next;
    $("search-more").hidden = !nextPage;
  }).catch((err) => say("Cannot search: " + err.message, true));
}
function countMatches() {
  const state = searched.get("state");
  return api("jobs/count?" + searched).then(({ count, capped }) => {
    const shown = capped ? "More than " + count.toLocaleString() : count.toLocaleString();
    $("search-count").textContent = shown + (count === 1 && !capped ? " job matches." : " jobs match.");
    for (const [action, bulk] of Object.entries(BULK)) {
      const button = $("search-" + action);
      // Every field of the search must be one the bulk call takes, or it would take more.
      const fits = bulk.states.includes(state) && [...searched.keys()].every((name) => name === "state" || BULK_FIELDS.includes(name));
      button.hidden = !(fits && count > 0);
      button.textContent = bulk.verb + " all " + shown.toLowerCase();
      button.onclick = () => confirmBulk(action, count, capped);
    }
  }).catch((err) => say("Cannot count: " + err.message, true));
}
function confirmBulk(action, count, capped) {
  const bulk = BULK[action];
  const what = (capped ? "more than " + count.toLocaleString() : count.toLocaleString()) + " " + searched.get("state") + " job(s)";
  $("bulk-text").textContent = bulk.verb + " " + what + " matching " + describeSearch(searched) + "?" + (bulk.note || "");
  $("bulk-yes").textContent = bulk.verb + " " + what;
  $("bulk-yes").onclick = () => {
    $("bulk-confirm").close();
    return api("jobs/" + action + "?" + searched, { method: "POST", headers: { "X-Jobs-Admin": "1" } })
      .then((body) => { say(bulk.done(body)); refresh(); return search(searched); })
      .catch((err) => say(err.message, true));
  };
  $("bulk-confirm").showModal();
  $("bulk-no").focus();
}
const describeSearch = (params) => [...params].map(([name, value]) => name + " " + JSON.stringify(value)).join(", ");
searchForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const params = searchParams();
  history.replaceState(null, "", location.pathname + (params.size ? "?" + params : ""));
  search(params);
});
// A task's or a queue's name and counts elsewhere on the page link to their jobs here (findLink):
// followed in place, the search in the address as a submitted one's.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a.find-link");
  if (!link) return;
  event.preventDefault();
  fillSearchForm(new URL(link.href).searchParams);
  const params = searchParams();
  history.replaceState(null, "", location.pathname + "?" + params);
  search(params).then(() => $("find").scrollIntoView());
});
$("search-clear").addEventListener("click", () => {
  searchForm.reset();
  history.replaceState(null, "", location.pathname);
  searched = null;
  $("search-found").hidden = true;
});
$("search-more").addEventListener("click", () => loadPage());
$("bulk-no").addEventListener("click", () => $("bulk-confirm").close());
// A link with a search in its address opens on its results.
const linked = new URLSearchParams(location.search);
if ([...linked.keys()].some((name) => SEARCH_FIELDS.includes(name))) {
  fillSearchForm(linked);
  search(searchParams());
}
`;

const input = (name: string, label: string, attrs = '') =>
  `<label>${label} <input name="${name}" id="search-${name}" autocomplete="off"${attrs}></label>`;

export const SEARCH_HTML = `
<section id="find" aria-labelledby="find-title">
<h2 id="find-title">Find jobs <small>(the search is in the address: copy it to share it)</small></h2>
<form id="search" role="search">
<label>State <select name="state" id="search-state"><option value="">any</option>${LISTED_STATES.map((state) => `<option>${state}</option>`).join('')}</select></label>
${input('task', 'Task')}
${input('queue', 'Queue')}
${input('groupKey', 'Group')}
${input('uniqueKey', 'Unique key', ' maxlength="1000"')}
${input('error', 'Error contains', ' type="search" maxlength="200"')}
${input('id', 'Job id or its start', ' maxlength="36"')}
${input('flow', 'Flow id', ' maxlength="36"')}
${input('after', 'Created from', ' type="datetime-local"')}
${input('before', 'to', ' type="datetime-local"')}
<button type="submit">Find</button> <button type="button" id="search-clear">Clear</button>
</form>
<div id="search-found" hidden>
<p><span id="search-count" role="status"></span> <button type="button" id="search-retry" class="bulk" hidden></button> <button type="button" id="search-cancel" class="bulk" hidden></button> <button type="button" id="search-delete" class="bulk" hidden></button></p>
<table><caption class="visually-hidden">Jobs found</caption><thead><tr><th>Job</th><th>Task</th><th>State</th><th>Queue</th><th>Attempts</th><th>Last change</th><th>Last error</th></tr></thead><tbody id="search-results"></tbody></table>
<p><button type="button" id="search-more" hidden>More</button></p>
</div>
<dialog id="bulk-confirm" aria-labelledby="bulk-text"><p id="bulk-text"></p><p><button type="button" id="bulk-yes"></button> <button type="button" id="bulk-no">Keep them</button></p></dialog>
</section>
`;

export const SEARCH_STYLE = `
#search { display: flex; flex-wrap: wrap; gap: .4rem .8rem; align-items: end; }
#search label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
#search input, #search select { font: inherit; padding: .2rem .3rem; min-width: 9rem; box-sizing: border-box; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
`;
