import { useEffect, useState } from "preact/hooks";
import { getJSON, query } from "./api.js";
import { ErrorText, ScrollTable, fmtNum } from "./shared.jsx";

const DAY = 86400000;
// Colours for series: distinguishable, dark enough on white, and every
// chart also has a legend and a table, so colour is never the only cue.
const palette = ["#1f5fbf", "#b3541e", "#2e7d32", "#7b3fa0", "#9a6b00", "#00727a", "#b0285a", "#555555"];
// Dash patterns of the line charts' series, by provider: solid first.
const dashes = ["", "6 3", "2 3", "8 3 2 3", "1 2", "10 4"];

function utcDay(d) {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}
function isoDay(d) {
  return d.toISOString().slice(0, 10);
}

export function Usage() {
  const [days, setDays] = useState(14);
  const [data, setData] = useState(null);
  const [error, setError] = useState("");

  useEffect(() => {
    const until = new Date(utcDay(new Date()).getTime() + DAY);
    const since = new Date(until.getTime() - days * DAY);
    const q = { since: isoDay(since), until: isoDay(until) };
    setError("");
    let stale = false; // a period chosen since: its answer wins
    Promise.all([
      getJSON("/v1/usage" + query({ ...q, group_by: "provider,day" })),
      getJSON("/v1/usage" + query({ ...q, group_by: "provider" })),
    ]).then(([byProviderDay, byProvider]) => {
      if (stale) return;
      const dayList = [];
      for (let t = since.getTime(); t < until.getTime(); t += DAY) dayList.push(isoDay(new Date(t)));
      setData({ byProviderDay, byProvider, days: dayList });
    }).catch((e) => { if (!stale) setError(e.message); });
    return () => { stale = true; };
  }, [days]);

  return (
    <div class="usage">
      <div class="toolbar">
        <label for="u-range">Period</label>
        <select id="u-range" value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
          <option value={7}>Last 7 days</option>
          <option value={14}>Last 14 days</option>
          <option value={30}>Last 30 days</option>
          <option value={90}>Last 90 days</option>
        </select>
        <span class="meta">UTC days</span>
      </div>
      <ErrorText>{error}</ErrorText>
      {!data && !error && <p role="status">Loading…</p>}
      {data && <UsageCharts data={data} />}
    </div>
  );
}

const fmtMS = (v) => fmtNum(v, 1) + " ms";
const fmtPct = (v) => fmtNum(v, 1) + " %";

function UsageCharts({ data }) {
  const name = (g) => g.provider || "(none)";
  const providers = data.byProvider.data.map(name);
  const colour = (p) => palette[providers.indexOf(p) % palette.length];
  const dash = (p) => dashes[providers.indexOf(p) % dashes.length];
  // One figure per provider and day (each group of GET /v1/usage
  // ?group_by=provider,day), or null for a day the provider had no
  // requests: no latency and no error rate rather than a made-up zero.
  const groupOf = {};
  for (const g of data.byProviderDay.data) groupOf[g.day + "\n" + name(g)] = g;
  const value = (day, p, fn) => {
    const g = groupOf[day + "\n" + p];
    return g && g.requests > 0 ? fn(g) : null;
  };
  const stacked = (field) => data.days.map((day) => ({
    day,
    parts: providers.map((p) => ({ key: p, value: value(day, p, (g) => g[field]) || 0 })).filter((x) => x.value > 0),
  }));
  const perProvider = (fn) => providers.map((p) => ({
    key: p, colour: colour(p), dash: dash(p), points: data.days.map((day) => ({ day, value: value(day, p, fn) })),
  }));
  const t = data.byProvider.total;
  return (
    <>
      <ul class="kpis" aria-label="Totals for the period">
        <li><span class="kpi-label">Requests</span><span class="kpi">{fmtNum(t.requests)}</span></li>
        <li><span class="kpi-label">Characters</span><span class="kpi">{fmtNum(t.characters)}</span></li>
        <li><span class="kpi-label">Audio</span><span class="kpi">{fmtNum(t.audio_seconds / 60, 1)} min</span></li>
        <li><span class="kpi-label">Credits</span><span class="kpi">{fmtNum(t.credits)}</span></li>
        <li><span class="kpi-label">Spend</span><span class="kpi">{fmtNum(t.cost || 0, 2)} {data.byProvider.currency || ""}</span></li>
        <li><span class="kpi-label">Error rate</span><span class="kpi">{fmtNum(t.error_rate * 100, 1)} %</span></li>
        <li><span class="kpi-label">Latency p50 / p95</span><span class="kpi">{fmtNum(t.latency_ms.p50)} / {fmtNum(t.latency_ms.p95)} ms</span></li>
      </ul>
      <Legend items={providers.map((p) => ({ key: p, colour: colour(p) }))} />
      <div class="charts">
        <BarChart id="requests" title="Requests per day, by provider" series={stacked("requests")} providers={providers} colour={colour} />
        <BarChart id="characters" title="Characters per day, by provider" series={stacked("characters")} providers={providers} colour={colour} />
        <BarChart id="credits" title="Credits per day, by provider" series={stacked("credits")} providers={providers} colour={colour} />
        <BarChart id="cost" title={`Spend per day, by provider (${data.byProvider.currency || ""})`} series={stacked("cost")} providers={providers} colour={colour} />
        <LineChart id="latency-p50" title="Latency p50 per day, by provider (ms)" format={fmtMS} lines={perProvider((g) => g.latency_ms.p50)} />
        <LineChart id="latency-p95" title="Latency p95 per day, by provider (ms)" format={fmtMS} lines={perProvider((g) => g.latency_ms.p95)} />
        <LineChart id="error-rate" title="Error rate per day, by provider (%)" format={fmtPct} lines={perProvider((g) => g.error_rate * 100)} />
      </div>
      <h2>By provider</h2>
      {data.byProvider.data.length === 0 ? <p class="empty">No requests in this period.</p> : (
        <ScrollTable label="Usage by provider">
          <thead>
            <tr>
              <th scope="col">Provider</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Errors</th>
              <th scope="col" class="num">Characters</th><th scope="col" class="num">Audio (s)</th><th scope="col" class="num">Credits</th>
              <th scope="col" class="num">Spend</th><th scope="col" class="num">Cache hits</th><th scope="col" class="num">p50 ms</th><th scope="col" class="num">p95 ms</th>
            </tr>
          </thead>
          <tbody>
            {data.byProvider.data.map((g) => (
              <tr key={g.provider}>
                <th scope="row">{g.provider || "(none)"}</th><td class="num">{fmtNum(g.requests)}</td>
                <td class="num">{fmtNum(g.errors)} ({fmtNum(g.error_rate * 100, 1)} %)</td><td class="num">{fmtNum(g.characters)}</td>
                <td class="num">{fmtNum(g.audio_seconds, 1)}</td><td class="num">{fmtNum(g.credits)}</td><td class="num">{fmtNum(g.cost || 0, 4)}</td><td class="num">{fmtNum(g.cache_hits)}</td>
                <td class="num">{fmtNum(g.latency_ms.p50)}</td><td class="num">{fmtNum(g.latency_ms.p95)}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
    </>
  );
}

function Legend({ items }) {
  if (!items.length) return null;
  return (
    <ul class="legend" aria-label="Providers">
      {items.map((i) => <li key={i.key}><span class="swatch" style={{ background: i.colour }} aria-hidden="true" />{i.key}</li>)}
    </ul>
  );
}

// DataTable is a chart's text alternative: its figures by day (the rows)
// and provider (the columns), behind a disclosure so the charts stay
// compact; "—" marks a day a provider had no requests.
function DataTable({ id, title, days, columns, cell }) {
  const shown = days.filter((d) => columns.some((c) => cell(d, c) !== null));
  return (
    <details class="chart-data">
      <summary>Table<span class="sr-only"> of {title}</span></summary>
      {shown.length === 0 ? <p class="empty">No requests in this period.</p> : (
        <ScrollTable label={`${title}: table`}>
          <thead>
            <tr><th scope="col">Day</th>{columns.map((c) => <th key={c} scope="col" class="num">{c}</th>)}</tr>
          </thead>
          <tbody>
            {shown.map((d) => (
              <tr key={d} data-day={d}>
                <th scope="row" class="nowrap">{d}</th>
                {columns.map((c) => {
                  const v = cell(d, c);
                  return <td key={c} class="num nowrap" data-series={c}>{v === null ? "—" : v}</td>;
                })}
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
    </details>
  );
}

const W = 560, H = 200, PAD = { l: 48, r: 8, t: 10, b: 26 };

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function Axes({ max, days }) {
  const ticks = [0, max / 2, max];
  const x = (i) => PAD.l + (i + 0.5) * ((W - PAD.l - PAD.r) / days.length);
  const every = Math.ceil(days.length / 7);
  return (
    <g class="axes" aria-hidden="true">
      {ticks.map((v) => {
        const y = H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
        return (
          <g key={v}>
            <line x1={PAD.l} x2={W - PAD.r} y1={y} y2={y} class="grid" />
            <text x={PAD.l - 6} y={y + 4} text-anchor="end">{fmtNum(v, v < 10 && v % 1 ? 1 : 0)}</text>
          </g>
        );
      })}
      {days.map((d, i) => (i % every === 0 ? <text key={d} x={x(i)} y={H - 8} text-anchor="middle">{d.slice(5)}</text> : null))}
    </g>
  );
}

function BarChart({ id, title, series, providers, colour }) {
  const totals = series.map((s) => s.parts.reduce((a, p) => a + p.value, 0));
  const max = niceMax(Math.max(0, ...totals));
  const bw = (W - PAD.l - PAD.r) / series.length;
  const scale = (v) => (v / max) * (H - PAD.t - PAD.b);
  const summary = `${title}: ${fmtNum(totals.reduce((a, b) => a + b, 0))} in total, at most ${fmtNum(Math.max(0, ...totals))} on one day.`;
  const byDay = Object.fromEntries(series.map((s, i) => [s.day, { s, total: totals[i] }]));
  const cell = (day, c) => {
    const { s, total } = byDay[day];
    if (!total) return null;
    if (c === "all") return fmtNum(total);
    const part = s.parts.find((p) => p.key === c);
    return fmtNum(part ? part.value : 0);
  };
  return (
    <figure class="chart" data-chart={id}>
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary}>
        <Axes max={max} days={series.map((s) => s.day)} />
        {series.map((s, i) => {
          let y = H - PAD.b;
          return (
            <g key={s.day}>
              {s.parts.map((p) => {
                const h = scale(p.value);
                y -= h;
                return <rect key={p.key} data-series={p.key} x={PAD.l + i * bw + bw * 0.15} width={bw * 0.7} y={y} height={Math.max(h, 0)} fill={colour(p.key)}><title>{`${s.day} ${p.key}: ${fmtNum(p.value)}`}</title></rect>;
              })}
            </g>
          );
        })}
      </svg>
      <DataTable id={id} title={title} days={series.map((s) => s.day)} columns={providers.length > 1 ? providers.concat("all") : providers} cell={cell} />
    </figure>
  );
}

// LineChart draws one line per series (a provider), broken where a day
// has no value; each series has its colour and its dash pattern, so the
// lines differ by more than colour, and a table says it all in text.
function LineChart({ id, title, format, lines }) {
  const values = lines.flatMap((l) => l.points.map((p) => p.value).filter((v) => v !== null));
  const max = niceMax(Math.max(0, ...values));
  const days = lines.length ? lines[0].points.map((p) => p.day) : [];
  const x = (i) => PAD.l + (i + 0.5) * ((W - PAD.l - PAD.r) / days.length);
  const y = (v) => H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
  const summary = `${title}: ` + (values.length === 0 ? "no requests." : lines.map((l) => {
    const vs = l.points.map((p) => p.value).filter((v) => v !== null);
    return vs.length ? `${l.key} at most ${format(Math.max(...vs))} on ${vs.length} day${vs.length === 1 ? "" : "s"}` : `${l.key} no requests`;
  }).join("; ") + ".");
  // runs splits a line's points into runs of consecutive days with values.
  const runs = (points) => {
    const out = [];
    let cur = [];
    points.forEach((p, i) => {
      if (p.value === null) { if (cur.length) out.push(cur); cur = []; return; }
      cur.push(`${x(i)},${y(p.value)}`);
    });
    if (cur.length) out.push(cur);
    return out;
  };
  const byKey = Object.fromEntries(lines.map((l) => [l.key, Object.fromEntries(l.points.map((p) => [p.day, p.value]))]));
  const cell = (day, key) => {
    const v = byKey[key][day];
    return v === null || v === undefined ? null : format(v);
  };
  return (
    <figure class="chart" data-chart={id}>
      <figcaption>{title}
        <span class="inline-legend" aria-hidden="true">{lines.map((l) => (
          <span key={l.key}>
            <svg class="line-key" viewBox="0 0 24 8" width="24" height="8"><line x1="0" y1="4" x2="24" y2="4" stroke={l.colour} stroke-width="2" stroke-dasharray={l.dash} /></svg>{l.key}
          </span>
        ))}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary}>
        <Axes max={max} days={days} />
        {lines.map((l) => (
          <g key={l.key} data-series={l.key}>
            {runs(l.points).map((pts, j) => pts.length > 1 && <polyline key={j} points={pts.join(" ")} fill="none" stroke={l.colour} stroke-width="2" stroke-dasharray={l.dash} />)}
            {l.points.map((p, i) => (p.value === null ? null : <circle key={i} cx={x(i)} cy={y(p.value)} r="3" fill={l.colour}><title>{`${p.day} ${l.key}: ${format(p.value)}`}</title></circle>))}
          </g>
        ))}
      </svg>
      <DataTable id={id} title={title} days={days} columns={lines.map((l) => l.key)} cell={cell} />
    </figure>
  );
}
