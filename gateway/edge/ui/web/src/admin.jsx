import { useEffect, useRef, useState } from "preact/hooks";
import { getJSON, query, request, sendJSON } from "./api.js";
import { ErrorText, ScrollTable, fmtNum } from "./shared.jsx";

// The admin view: what an admin key sees instead of an organization's
// views. Everything goes through /v1/admin/ (docs/api.md#the-admin-api).

// allPages reads every page of a cursor-paged list.
async function allPages(path, params) {
  let out = [];
  let cursor = "";
  for (;;) {
    const page = await getJSON(path + query({ ...params, limit: 200, cursor }));
    out = out.concat(page.data);
    if (!page.has_more) return out;
    cursor = page.next_cursor;
  }
}

const budgetText = (b) => (b ? `${fmtNum(b.credits)} / ${b.period}` : "—");
const spendText = (g) => `${fmtNum(g ? g.credits : 0)} credits, ${fmtNum(g ? g.requests : 0)} requests`;
const rateText = (r) => (r ? `${fmtNum(r.per_minute)} / min` : "—");

export function Orgs() {
  const [orgs, setOrgs] = useState(null);
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const load = () => allPages("/v1/admin/orgs", {}).then(setOrgs).catch((e) => setError(e.message));
  useEffect(() => { load(); }, []);

  async function setDisabled(o, disabled) {
    setError("");
    try {
      await sendJSON("PATCH", "/v1/admin/orgs/" + encodeURIComponent(o.id), { disabled });
      setNotice(`${disabled ? "Disabled" : "Enabled"} ${o.id}.`);
      await load();
    } catch (e) {
      setError(e.message);
    }
  }

  return (
    <div class="admin-orgs">
      <p class="meta" role="status" aria-live="polite">{notice}</p>
      <ErrorText>{error}</ErrorText>
      {orgs === null ? <p>Loading…</p> : (
        <ScrollTable label="Organizations">
          <thead>
            <tr><th scope="col">Id</th><th scope="col">Name</th><th scope="col">Managed by</th><th scope="col">Status</th><th scope="col">Budget</th><th scope="col">Rate limit</th><th scope="col">Providers</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
          </thead>
          <tbody>
            {orgs.map((o) => (
              <tr key={o.id} data-org-id={o.id}>
                <th scope="row"><code>{o.id}</code></th>
                <td>{o.name}</td>
                <td>{o.managedBy === "file" ? "gateway.yaml" : "admin API"}</td>
                <td>{o.disabled ? "disabled" : "active"}</td>
                <td class="num">{budgetText(o.budget)}</td>
                <td class="num">{rateText(o.rate_limit)}</td>
                <td>{o.providers ? Object.keys(o.providers).filter((p) => o.providers[p].enabled).join(", ") || "none" : "see gateway.yaml"}</td>
                <td>{o.managedBy === "api" && (
                  <button type="button" class={o.disabled ? "" : "danger"} onClick={() => setDisabled(o, !o.disabled)}
                    aria-label={`${o.disabled ? "Enable" : "Disable"} ${o.id}`}>{o.disabled ? "Enable" : "Disable"}</button>
                )}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
      <CreateOrg onCreated={(o) => { setNotice(`Created ${o.id}.`); load(); }} />
    </div>
  );
}

function CreateOrg({ onCreated }) {
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [providers, setProviders] = useState("");
  const [error, setError] = useState("");
  async function submit(e) {
    e.preventDefault();
    setError("");
    const body = { id: id.trim(), name: name.trim() };
    const list = providers.split(",").map((p) => p.trim()).filter(Boolean);
    if (list.length) body.providers = Object.fromEntries(list.map((p) => [p, { enabled: true }]));
    try {
      const r = await sendJSON("POST", "/v1/admin/orgs", body);
      setId(""); setName(""); setProviders("");
      onCreated(r.data);
    } catch (err) {
      setError(err.message);
    }
  }
  return (
    <form class="card" onSubmit={submit} aria-labelledby="create-org-h">
      <h2 id="create-org-h">New organization</h2>
      <label for="org-id">Id</label>
      <input id="org-id" required pattern="[a-z0-9_\-]{1,64}" value={id} onInput={(e) => setId(e.currentTarget.value)} aria-describedby="org-id-hint" />
      <p id="org-id-hint" class="hint">Lower-case letters, digits, - and _.</p>
      <label for="org-name">Name</label>
      <input id="org-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for="org-providers">Providers enabled</label>
      <input id="org-providers" value={providers} onInput={(e) => setProviders(e.currentTarget.value)} placeholder="espeak, openai" aria-describedby="org-providers-hint" />
      <p id="org-providers-hint" class="hint">Comma-separated provider ids.</p>
      <button type="submit">Create organization</button>
      <ErrorText>{error}</ErrorText>
    </form>
  );
}

export function Keys() {
  const [orgs, setOrgs] = useState(null);
  const [org, setOrg] = useState("");
  const [keys, setKeys] = useState(null);
  const [spend, setSpend] = useState({});
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const [made, setMade] = useState(null);
  const madeRef = useRef(null);
  useEffect(() => {
    allPages("/v1/admin/orgs", {}).then((os) => { setOrgs(os); if (os.length) setOrg(os[0].id); }).catch((e) => setError(e.message));
  }, []);
  async function load(o) {
    if (!o) return;
    try {
      setKeys(await allPages("/v1/admin/keys", { org: o }));
      const u = await getJSON("/v1/admin/orgs/" + encodeURIComponent(o) + "/usage" + query({ group_by: "key" }));
      setSpend(Object.fromEntries((u.data || []).map((g) => [g.key_id, g])));
    } catch (e) {
      setError(e.message);
    }
  }
  useEffect(() => { setKeys(null); load(org); }, [org]);
  useEffect(() => { if (made && madeRef.current) madeRef.current.focus(); }, [made]);

  async function revoke(k) {
    if (!confirm(`Revoke the key “${k.name || k.prefix}”? It stops working at once.`)) return;
    setError("");
    try {
      await request("DELETE", "/v1/admin/keys/" + encodeURIComponent(k.id));
      setNotice(`Revoked ${k.name || k.prefix}.`);
      await load(org);
    } catch (e) {
      setError(e.message);
    }
  }

  if (orgs === null) return error ? <ErrorText>{error}</ErrorText> : <p>Loading…</p>;
  return (
    <div class="admin-keys">
      <label for="keys-org">Organization</label>
      <select id="keys-org" value={org} onChange={(e) => setOrg(e.currentTarget.value)}>
        {orgs.map((o) => <option key={o.id} value={o.id}>{o.id}</option>)}
      </select>
      <p class="meta" role="status" aria-live="polite">{notice}</p>
      <ErrorText>{error}</ErrorText>
      {made && (
        <div class="card notice" tabIndex={-1} ref={madeRef} aria-labelledby="made-h">
          <h2 id="made-h">Key created</h2>
          <p>Copy it now: it is shown only once.</p>
          <p><code class="secret" id="made-key">{made.key}</code></p>
          <button type="button" onClick={() => setMade(null)}>Done</button>
        </div>
      )}
      {keys === null ? <p>Loading…</p> : keys.length === 0 ? <p class="empty">No keys yet.</p> : (
        <ScrollTable label={`Keys of ${org}`}>
          <thead>
            <tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Status</th><th scope="col">Rate limit</th><th scope="col">Budget</th><th scope="col" class="num">Spent, 30 days</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-key-id={k.id}>
                <th scope="row">{k.name || "—"}</th>
                <td><code>{k.prefix}…</code></td>
                <td>{k.status}</td>
                <td class="num">{rateText(k.rate_limit)}</td>
                <td class="num">{budgetText(k.budget)}</td>
                <td class="num">{spendText(spend[k.id])}</td>
                <td>{k.status !== "revoked" && (
                  <button type="button" class="danger" onClick={() => revoke(k)} aria-label={`Revoke ${k.name || k.prefix}`}>Revoke</button>
                )}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
      {org && <CreateKey org={org} onCreated={(k) => { setMade(k); load(org); }} />}
    </div>
  );
}

function CreateKey({ org, onCreated }) {
  const [name, setName] = useState("");
  const [perMinute, setPerMinute] = useState("");
  const [credits, setCredits] = useState("");
  const [period, setPeriod] = useState("month");
  const [error, setError] = useState("");
  async function submit(e) {
    e.preventDefault();
    setError("");
    const body = { org, name: name.trim() };
    if (perMinute) body.rate_limit = { per_minute: Number(perMinute) };
    if (credits) body.budget = { credits: Number(credits), period };
    try {
      const r = await sendJSON("POST", "/v1/admin/keys", body);
      setName(""); setPerMinute(""); setCredits("");
      onCreated(r.data);
    } catch (err) {
      setError(err.message);
    }
  }
  return (
    <form class="card" onSubmit={submit} aria-labelledby="create-key-h">
      <h2 id="create-key-h">New key for {org}</h2>
      <label for="key-name">Name</label>
      <input id="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for="key-rate">Requests a minute</label>
      <input id="key-rate" type="number" min="0" value={perMinute} onInput={(e) => setPerMinute(e.currentTarget.value)} aria-describedby="key-optional" />
      <label for="key-budget">Budget (credits)</label>
      <input id="key-budget" type="number" min="0" value={credits} onInput={(e) => setCredits(e.currentTarget.value)} aria-describedby="key-optional" />
      <label for="key-period">Budget period</label>
      <select id="key-period" value={period} onChange={(e) => setPeriod(e.currentTarget.value)}>
        <option value="day">day</option>
        <option value="month">month</option>
      </select>
      <p id="key-optional" class="hint">Empty: no limit of the key's own.</p>
      <button type="submit">Create key</button>
      <ErrorText>{error}</ErrorText>
    </form>
  );
}
