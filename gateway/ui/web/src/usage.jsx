import { useEffect, useState } from "preact/hooks";
import { getJSON, query } from "./api.js";
import { ErrorText, ScrollTable, fmtNum } from "./shared.jsx";

const DAY = 86400000;
// Colours for series: distinguishable, dark enough on white, and every
// chart also has a legend and a table, so colour is never the only cue.
const palette = ["#1f5fbf", "#b3541e", "#2e7d32", "#7b3fa0", "#9a6b00", "#00727a", "#b0285a", "#555555"];

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
    Promise.all([
      getJSON("/v1/usage" + query({ ...q, group_by: "provider,day" })),
      getJSON("/v1/usage" + query({ ...q, group_by: "day" })),
      getJSON("/v1/usage" + query({ ...q, group_by: "provider" })),
    ]).then(([byProviderDay, byDay, byProvider]) => {
      const dayList = [];
      for (let t = since.getTime(); t < until.getTime(); t += DAY) dayList.push(isoDay(new Date(t)));
      setData({ byProviderDay, byDay, byProvider, days: dayList });
    }).catch((e) => setError(e.message));
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

function UsageCharts({ data }) {
  const providers = data.byProvider.data.map((g) => g.provider || "(none)");
  const colour = (p) => palette[providers.indexOf(p) % palette.length];
  const stacked = (field) => data.days.map((day) => ({
    day,
    parts: data.byProviderDay.data.filter((g) => g.day === day).map((g) => ({ key: g.provider || "(none)", value: g[field] })),
  }));
  const daily = (fn) => data.days.map((day) => {
    const g = data.byDay.data.find((x) => x.day === day);
    return { day, value: g ? fn(g) : null };
  });
  const t = data.byDay.total;
  return (
    <>
      <ul class="kpis" aria-label="Totals for the period">
        <li><span class="kpi-label">Requests</span><span class="kpi">{fmtNum(t.requests)}</span></li>
        <li><span class="kpi-label">Characters</span><span class="kpi">{fmtNum(t.characters)}</span></li>
        <li><span class="kpi-label">Audio</span><span class="kpi">{fmtNum(t.audio_seconds / 60, 1)} min</span></li>
        <li><span class="kpi-label">Credits</span><span class="kpi">{fmtNum(t.credits)}</span></li>
        <li><span class="kpi-label">Error rate</span><span class="kpi">{fmtNum(t.error_rate * 100, 1)} %</span></li>
        <li><span class="kpi-label">Latency p50 / p95</span><span class="kpi">{fmtNum(t.latency_ms.p50)} / {fmtNum(t.latency_ms.p95)} ms</span></li>
      </ul>
      <Legend items={providers.map((p) => ({ key: p, colour: colour(p) }))} />
      <div class="charts">
        <BarChart title="Requests per day, by provider" series={stacked("requests")} colour={colour} />
        <BarChart title="Characters per day, by provider" series={stacked("characters")} colour={colour} />
        <BarChart title="Credits per day, by provider" series={stacked("credits")} colour={colour} />
        <LineChart title="Latency per day (ms)" unit="ms" lines={[
          { key: "p50", colour: palette[0], points: daily((g) => g.latency_ms.p50) },
          { key: "p95", colour: palette[1], points: daily((g) => g.latency_ms.p95) },
          { key: "p99", colour: palette[3], points: daily((g) => g.latency_ms.p99) },
        ]} />
        <LineChart title="Error rate per day (%)" unit="%" lines={[
          { key: "errors", colour: palette[6], points: daily((g) => g.error_rate * 100) },
        ]} />
      </div>
      <h2>By provider</h2>
      {data.byProvider.data.length === 0 ? <p class="empty">No requests in this period.</p> : (
        <ScrollTable label="Usage by provider">
          <thead>
            <tr>
              <th scope="col">Provider</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Errors</th>
              <th scope="col" class="num">Characters</th><th scope="col" class="num">Audio (s)</th><th scope="col" class="num">Credits</th>
              <th scope="col" class="num">Cache hits</th><th scope="col" class="num">p50 ms</th><th scope="col" class="num">p95 ms</th>
            </tr>
          </thead>
          <tbody>
            {data.byProvider.data.map((g) => (
              <tr key={g.provider}>
                <th scope="row">{g.provider || "(none)"}</th><td class="num">{fmtNum(g.requests)}</td>
                <td class="num">{fmtNum(g.errors)} ({fmtNum(g.error_rate * 100, 1)} %)</td><td class="num">{fmtNum(g.characters)}</td>
                <td class="num">{fmtNum(g.audio_seconds, 1)}</td><td class="num">{fmtNum(g.credits)}</td><td class="num">{fmtNum(g.cache_hits)}</td>
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

const W = 560, H = 200, PAD = { l: 48, r: 8, t: 10, b: 26 };

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function Axes({ max, days, unit }) {
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
            <text x={PAD.l - 6} y={y + 4} text-anchor="end">{fmtNum(v, v < 10 && v % 1 ? 1 : 0)}{unit === "%" ? "" : ""}</text>
          </g>
        );
      })}
      {days.map((d, i) => (i % every === 0 ? <text key={d} x={x(i)} y={H - 8} text-anchor="middle">{d.slice(5)}</text> : null))}
    </g>
  );
}

function BarChart({ title, series, colour }) {
  const totals = series.map((s) => s.parts.reduce((a, p) => a + p.value, 0));
  const max = niceMax(Math.max(0, ...totals));
  const bw = (W - PAD.l - PAD.r) / series.length;
  const scale = (v) => (v / max) * (H - PAD.t - PAD.b);
  const summary = `${title}: ${fmtNum(totals.reduce((a, b) => a + b, 0))} in total, at most ${fmtNum(Math.max(0, ...totals))} on one day.`;
  return (
    <figure class="chart">
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
                return <rect key={p.key} x={PAD.l + i * bw + bw * 0.15} width={bw * 0.7} y={y} height={Math.max(h, 0)} fill={colour(p.key)}><title>{`${s.day} ${p.key}: ${fmtNum(p.value)}`}</title></rect>;
              })}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

function LineChart({ title, unit, lines }) {
  const values = lines.flatMap((l) => l.points.map((p) => p.value).filter((v) => v !== null));
  const max = niceMax(Math.max(0, ...values));
  const days = lines[0].points.map((p) => p.day);
  const x = (i) => PAD.l + (i + 0.5) * ((W - PAD.l - PAD.r) / days.length);
  const y = (v) => H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
  const summary = `${title}: ` + lines.map((l) => {
    const vs = l.points.map((p) => p.value).filter((v) => v !== null);
    return `${l.key} at most ${fmtNum(Math.max(0, ...vs), 1)}${unit === "%" ? " %" : " " + unit}`;
  }).join(", ") + ".";
  return (
    <figure class="chart">
      <figcaption>{title} <span class="inline-legend">{lines.map((l) => <span key={l.key}><span class="swatch" style={{ background: l.colour }} aria-hidden="true" />{l.key}</span>)}</span></figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary}>
        <Axes max={max} days={days} unit={unit} />
        {lines.map((l) => {
          const pts = l.points.map((p, i) => (p.value === null ? null : `${x(i)},${y(p.value)}`)).filter(Boolean);
          return (
            <g key={l.key}>
              {pts.length > 1 && <polyline points={pts.join(" ")} fill="none" stroke={l.colour} stroke-width="2" />}
              {l.points.map((p, i) => (p.value === null ? null : <circle key={i} cx={x(i)} cy={y(p.value)} r="3" fill={l.colour}><title>{`${p.day} ${l.key}: ${fmtNum(p.value, 1)}`}</title></circle>))}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
