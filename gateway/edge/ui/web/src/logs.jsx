import { useEffect, useRef, useState } from "preact/hooks";
import { getJSON, query } from "./api.js";
import { ErrorText, ScrollTable, Status, fmtNum, fmtTime, useCatalog } from "./shared.jsx";

const PAGE = 50;
const TAIL_MS = 2000;

// toISO turns a datetime-local value (the browser's zone) into UTC ISO.
function toISO(local) {
  if (!local) return "";
  const d = new Date(local);
  return isNaN(d) ? "" : d.toISOString();
}

const emptyFilters = { provider: "", status: "", since: "", until: "", parent_request_id: "" };

function filterQuery(f) {
  return {
    provider: f.provider,
    status: f.status,
    since: toISO(f.since),
    until: toISO(f.until),
    parent_request_id: f.parent_request_id.trim(),
  };
}

export function Logs() {
  const [catalog] = useCatalog();
  const [draft, setDraft] = useState(emptyFilters);
  const [filters, setFilters] = useState(emptyFilters);
  const [rows, setRows] = useState([]);
  const [cursor, setCursor] = useState("");
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState("");
  const [tail, setTail] = useState(false);
  const [selected, setSelected] = useState(null);
  const [fresh, setFresh] = useState(0);
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  // focusRow names the row whose button gets the keyboard focus after
  // the next render: the first row of a page "Load more" brought (the
  // button itself may be gone), or the row whose detail was just closed.
  const focusRow = useRef("");
  const opener = useRef(""); // the row whose button opened the detail
  useEffect(() => {
    if (!focusRow.current) return;
    const btn = [...document.querySelectorAll("tr[data-request-id]")]
      .find((tr) => tr.dataset.requestId === focusRow.current);
    focusRow.current = "";
    if (btn) btn.querySelector("button").focus();
    else document.getElementById("main").focus();
  });

  // Only the latest load counts: filters applied (or reset) while an
  // earlier page is still on its way must not be overwritten by it.
  const loads = useRef(0);
  async function load(f, after) {
    const n = ++loads.current;
    setLoading(true);
    setError("");
    try {
      const page = await getJSON("/v1/logs" + query({ ...filterQuery(f), limit: PAGE, cursor: after }));
      if (n !== loads.current) return;
      if (after && page.data.length) focusRow.current = page.data[0].request_id;
      setRows((old) => (after ? old.concat(page.data) : page.data));
      setCursor(page.has_more ? page.next_cursor : "");
    } catch (e) {
      if (n === loads.current) setError(e.message);
    } finally {
      if (n === loads.current) setLoading(false);
    }
  }

  useEffect(() => { load(filters, ""); }, [filters]);

  // Live tail: ask for rows at or after the newest shown, every two
  // seconds, and put the new ones on top.
  useEffect(() => {
    if (!tail || filters.until) return;
    let stopped = false;
    const tick = async () => {
      const newest = rowsRef.current[0];
      const since = newest ? newest.ts : toISO(filters.since);
      try {
        const page = await getJSON("/v1/logs" + query({ ...filterQuery(filters), since, limit: PAGE }));
        if (stopped) return;
        const seen = new Set(rowsRef.current.map((r) => r.request_id));
        const added = page.data.filter((r) => !seen.has(r.request_id));
        if (added.length) {
          setRows((old) => added.concat(old));
          setFresh((n) => n + added.length);
        }
      } catch { /* a failed poll is retried at the next tick */ }
    };
    const id = setInterval(tick, TAIL_MS);
    tick();
    return () => { stopped = true; clearInterval(id); };
  }, [tail, filters]);

  function apply(e) {
    e.preventDefault();
    setSelected(null);
    setFresh(0);
    setFilters({ ...draft });
  }
  function reset() {
    setDraft(emptyFilters);
    setFilters(emptyFilters);
    setSelected(null);
  }
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });

  return (
    <div class="logs">
      <form class="filters" onSubmit={apply} aria-label="Filter request logs">
        <div class="field">
          <label for="f-provider">Provider</label>
          <select id="f-provider" value={draft.provider} onChange={set("provider")}>
            <option value="">Any</option>
            {(catalog || []).map((p) => <option key={p.id} value={p.id}>{p.name || p.id}</option>)}
            <option value="mixed">mixed (conversations)</option>
          </select>
        </div>
        <div class="field">
          <label for="f-status">Status</label>
          <input id="f-status" type="number" min="100" max="599" inputMode="numeric" placeholder="e.g. 200" value={draft.status} onInput={set("status")} />
        </div>
        <div class="field">
          <label for="f-since">Since</label>
          <input id="f-since" type="datetime-local" step="1" value={draft.since} onInput={set("since")} />
        </div>
        <div class="field">
          <label for="f-until">Until</label>
          <input id="f-until" type="datetime-local" step="1" value={draft.until} onInput={set("until")} />
        </div>
        <div class="field wide">
          <label for="f-parent">Parent request id</label>
          <input id="f-parent" type="text" spellcheck={false} placeholder="a conversation's request id" value={draft.parent_request_id} onInput={set("parent_request_id")} />
        </div>
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="quiet" onClick={reset}>Reset</button>
          <label class="check">
            <input type="checkbox" checked={tail} disabled={!!filters.until} onChange={(e) => { setTail(e.currentTarget.checked); setFresh(0); }} />
            Live tail
          </label>
        </div>
      </form>
      <p class="meta" role="status" aria-live="polite">
        {loading ? "Loading…" : `${rows.length} row${rows.length === 1 ? "" : "s"} shown${cursor ? ", more available" : ""}${tail ? " · live" : ""}${fresh ? ` · ${fresh} new` : ""}`}
      </p>
      <ErrorText>{error}</ErrorText>
      <div class={selected ? "split" : ""}>
        <LogTable rows={rows} selected={selected} onSelect={(r) => { opener.current = r.request_id; setSelected(r); }} />
        {selected && <LogDetail row={selected} onClose={() => { focusRow.current = opener.current; setSelected(null); }} onOpen={setSelected} />}
      </div>
      {cursor && (
        <p><button type="button" onClick={() => { if (!loading) load(filters, cursor); }} aria-disabled={loading ? "true" : undefined}>Load more</button></p>
      )}
    </div>
  );
}

function LogTable({ rows, selected, onSelect }) {
  if (!rows.length) return <p class="empty">No request-log rows match.</p>;
  return (
    <ScrollTable label="Request logs">
      <caption class="sr-only">Request-log rows, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Request</th><th scope="col">Time</th><th scope="col">Status</th><th scope="col">Provider</th><th scope="col">Model</th>
          <th scope="col" class="num">Chars</th><th scope="col" class="num">Credits</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Latency</th>
          <th scope="col">Path</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.request_id} class={selected && selected.request_id === r.request_id ? "selected" : ""} data-request-id={r.request_id}>
            <td>
              <button type="button" class="link" onClick={() => onSelect(r)} title={r.request_id}>
                <span class="sr-only">Details of request </span>{r.request_id.slice(0, 8)}…
              </button>
            </td>
            <td class="nowrap">{fmtTime(r.ts)}</td>
            <td><Status code={r.status} /></td>
            <td>{r.provider || "—"}</td>
            <td class="nowrap">{r.model || "—"}</td>
            <td class="num">{fmtNum(r.char_count)}</td>
            <td class="num">{fmtNum(r.credits_used)}</td>
            <td class="num nowrap">{r.currency ? `${r.cost} ${r.currency}` : "—"}</td>
            <td class="num nowrap">{fmtNum(r.latency_ms)} ms</td>
            <td class="path">{r.path.replace(/^\/ui\/api/, "")}{r.parent_request_id ? " (turn)" : ""}</td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}

const detailFields = [
  ["request_id", "Request id"], ["parent_request_id", "Parent request"], ["ts", "Time"], ["path", "Path"],
  ["status", "Status"], ["error_code", "Error code"], ["error_detail", "Error detail"], ["provider", "Provider"],
  ["model", "Model"], ["voice_id", "Provider voice"], ["voice_ref", "Saved voice"], ["char_count", "Characters"],
  ["credits_used", "Credits"], ["cost", "Cost"], ["cost_estimate", "Quoted cost"], ["currency", "Currency"], ["latency_ms", "Latency (ms)"], ["audio_seconds", "Audio (s)"], ["key_id", "API key id"],
  ["cache", "Cache"], ["provider_options", "Provider options"],
];
const moderationFields = [
  ["moderation_decision", "Decision"], ["moderation_reason_type", "Reason"], ["moderation_reason_detail", "Detail"],
  ["moderation_confidence", "Confidence"], ["moderation_latency_ms", "Latency (ms)"],
];

function LogDetail({ row, onClose, onOpen }) {
  const [children, setChildren] = useState(null);
  const [error, setError] = useState("");
  const heading = useRef(null);
  const isConversation = row.path.includes("/conversation") && !row.parent_request_id;
  // A realtime context's row: its turn timing, from the row itself (time
  // to first audio and the text wait the aggregation cost).
  const isRealtime = row.path.includes("/realtime");
  useEffect(() => {
    heading.current && heading.current.focus();
    setChildren(null);
    setError("");
    if (!isConversation) return;
    getJSON("/v1/logs" + query({ parent_request_id: row.request_id, limit: 200 }))
      .then((p) => setChildren(p.data.slice().reverse()))
      .catch((e) => setError(e.message));
  }, [row.request_id]);
  const show = (v) => (v === "" || v === null || v === undefined ? "—" : String(v));
  return (
    <section class="detail" aria-labelledby="detail-title">
      <div class="detail-head">
        <h2 id="detail-title" tabIndex={-1} ref={heading}>Request {row.request_id.slice(0, 8)}…</h2>
        <button type="button" class="quiet" onClick={onClose}>Close</button>
      </div>
      <dl>
        {detailFields.map(([k, label]) => (
          <div key={k}><dt>{label}</dt><dd>{k === "ts" ? fmtTime(row[k]) : show(row[k])}</dd></div>
        ))}
      </dl>
      {isRealtime && (
        <>
          <h3>Turn timing</h3>
          <dl aria-label="Turn timing">
            <div><dt>Time to first audio (ms)</dt><dd data-field="time_to_first_audio_ms">{show(row.time_to_first_audio_ms)}</dd></div>
            <div><dt>Text wait (ms)</dt><dd data-field="text_wait_ms">{show(row.text_wait_ms)}</dd></div>
            <div><dt>Provider and gateway (ms)</dt><dd data-field="first_segment_to_audio_ms">{show(Math.max(0, (row.time_to_first_audio_ms || 0) - (row.text_wait_ms || 0)))}</dd></div>
          </dl>
        </>
      )}
      <h3>Moderation</h3>
      <dl>
        {moderationFields.map(([k, label]) => <div key={k}><dt>{label}</dt><dd>{show(row[k])}</dd></div>)}
      </dl>
      {isConversation && (
        <>
          <h3>Conversation turns</h3>
          <ErrorText>{error}</ErrorText>
          {children === null && !error && <p>Loading turns…</p>}
          {children && children.length === 0 && <p>No turn rows.</p>}
          {children && children.length > 0 && (
            <ol class="turns" aria-label="Conversation turns">
              {children.map((c) => (
                <li key={c.request_id} data-request-id={c.request_id}>
                  <Status code={c.status} /> {c.provider}/{c.model} · voice {c.voice_id || "—"} · {fmtNum(c.char_count)} chars · {fmtNum(c.latency_ms)} ms
                  {c.error_code ? ` · ${c.error_code}` : ""}{" "}
                  <button type="button" class="link" onClick={() => onOpen(c)}>open</button>
                </li>
              ))}
            </ol>
          )}
        </>
      )}
    </section>
  );
}
