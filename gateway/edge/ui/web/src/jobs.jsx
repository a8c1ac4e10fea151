import { useEffect, useRef, useState } from "preact/hooks";
import { getJSON, query, request, sendJSON } from "./api.js";
import { ErrorText, ScrollTable, fmtNum, fmtTime } from "./shared.jsx";

// Jobs lists the organization's long-form jobs (POST /v1/audio/jobs) with
// their progress, refreshed every few seconds while one runs, and links to
// the finished files, marking a job that finished with warnings
// (JobWarnings); a queued or running job can be cancelled, a finished
// one deleted with its file (DELETE /v1/audio/jobs/{id}).
export function Jobs() {
  const [jobs, setJobs] = useState(null);
  const [cursor, setCursor] = useState("");
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  // After a delete, the keyboard focus goes to the action button of the
  // row that took the deleted one's place (or the one above it), else to
  // the note that the list is empty, instead of being lost with the
  // removed button.
  const focusNext = useRef(null);
  useEffect(() => {
    if (!focusNext.current) return;
    const id = focusNext.current;
    focusNext.current = null;
    const row = [...document.querySelectorAll("tr[data-job-id]")].find((tr) => tr.dataset.jobId === id);
    const target = row ? row.querySelector("button") : document.getElementById("jobs-empty");
    if (target) target.focus();
  });

  async function load(after) {
    try {
      const page = await getJSON("/v1/audio/jobs" + query({ limit: 50, cursor: after }));
      setJobs((old) => (after ? (old || []).concat(page.data) : page.data));
      setCursor(page.has_more ? page.next_cursor : "");
    } catch (e) {
      setError(e.message);
    }
  }
  useEffect(() => { load(""); }, []);
  // While a job is queued or running, the first page is read again.
  const live = (jobs || []).some((j) => j.state === "queued" || j.state === "running");
  useEffect(() => {
    if (!live) return undefined;
    const t = setInterval(() => load(""), 3000);
    return () => clearInterval(t);
  }, [live]);

  async function cancel(j) {
    if (!confirm("Cancel this job?")) return;
    setError("");
    try {
      const r = await sendJSON("POST", "/v1/audio/jobs/" + encodeURIComponent(j.id) + "/cancel");
      setJobs((old) => old.map((x) => (x.id === j.id ? r.data : x)));
      setNotice("Cancelled the job.");
    } catch (e) {
      setError(e.message);
    }
  }

  // remove deletes finished job j, its record and its file. The server
  // refuses a queued or running job (409): its message is shown.
  async function remove(j) {
    if (!confirm("Delete this job and its file? This cannot be undone.")) return;
    setError("");
    try {
      await request("DELETE", "/v1/audio/jobs/" + encodeURIComponent(j.id));
      const i = jobs.findIndex((x) => x.id === j.id);
      const next = jobs[i + 1] || jobs[i - 1];
      focusNext.current = next ? next.id : "-";
      setJobs((old) => old.filter((x) => x.id !== j.id));
      setNotice("Deleted the job.");
    } catch (e) {
      setError(e.message);
    }
  }

  return (
    <div class="jobs">
      <p class="meta" role="status" aria-live="polite">{notice}</p>
      <ErrorText>{error}</ErrorText>
      {jobs === null ? <p>Loading…</p> : jobs.length === 0 ? <p class="empty" id="jobs-empty" tabIndex={-1}>No jobs yet: POST /v1/audio/jobs makes one (docs/jobs.md).</p> : (
        <ScrollTable label="Long-form jobs">
          <thead>
            <tr><th scope="col">Created</th><th scope="col">State</th><th scope="col">Progress</th><th scope="col" class="num">Characters</th><th scope="col" class="num">Credits</th><th scope="col">File</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.id} data-job-id={j.id}>
                <td>{fmtTime(j.created_at)}</td>
                <td><span class={"pill " + (j.state === "failed" ? "bad" : j.state === "succeeded" ? "ok" : "warn")}>{j.state}</span>{j.error ? <span class="hint"> {j.error.code}</span> : null}
                  {j.warnings && j.warnings.length > 0 ? <JobWarnings warnings={j.warnings} /> : null}</td>
                <td>
                  <progress max={j.chunks_total} value={j.chunks_done} aria-label={`${j.chunks_done} of ${j.chunks_total} chunks`} />{" "}
                  {j.chunks_done}/{j.chunks_total}
                  {j.estimated_seconds_left != null ? <span class="hint"> · about {fmtNum(j.estimated_seconds_left / 60, 1)} min left</span> : null}
                </td>
                <td class="num">{fmtNum(j.characters)}</td>
                <td class="num">{fmtNum(j.credits)}</td>
                <td>
                  {j.audio_url ? <a href={"/ui/api" + j.audio_url} download>{j.format} ({fmtNum(j.bytes / 1048576, 1)} MiB)</a> : "—"}
                  {j.audio_url && j.captions ? <> · <a href={`/ui/api/v1/audio/jobs/${j.id}/captions?format=vtt`} download>captions</a></> : null}
                </td>
                <td>{j.state === "queued" || j.state === "running"
                  ? <button type="button" class="danger" onClick={() => cancel(j)}>Cancel</button>
                  : <button type="button" class="danger" onClick={() => remove(j)} aria-label={`Delete the ${j.state} job created ${fmtTime(j.created_at)}`}>Delete</button>}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
      {cursor ? <button type="button" onClick={() => load(cursor)}>More</button> : null}
    </div>
  );
}

// JobWarnings marks a job that finished with warnings (where its file is
// not what it asked for, such as quieter than its loudness target:
// docs/jobs.md) with their count in its row, which opens to their text.
// The text is rendered as text, never as markup, like the other fields.
function JobWarnings({ warnings }) {
  const n = warnings.length;
  return (
    <details class="job-warnings">
      <summary><span aria-hidden="true">⚠ </span>{n === 1 ? "1 warning" : `${n} warnings`}</summary>
      <ul class="warnings">{warnings.map((w, i) => <li key={i}>{w}</li>)}</ul>
    </details>
  );
}
