import { ErrorText, ScrollTable, useCatalog } from "./shared.jsx";

const yes = (b) => (b ? "yes" : "no");

export function Providers() {
  const [catalog, error] = useCatalog();
  if (error) return <ErrorText>{error}</ErrorText>;
  if (!catalog) return <p role="status">Loading…</p>;
  return (
    <div class="providers">
      {catalog.map((p) => (
        <section key={p.id} class="card" aria-labelledby={"prov-" + p.id}>
          <div class="detail-head">
            <h2 id={"prov-" + p.id}>{p.name || p.id} <code class="hint">{p.id}</code></h2>
            <span class={"pill " + (p.status === "available" ? "ok" : "warn")}>status: {p.status}</span>
          </div>
          <p class="meta">
            {p.config.enabled ? "Enabled" : "Not enabled"} for this organization · managed credentials {p.config.managed ? "allowed" : "not allowed"} · own key (BYOK) {p.config.byok ? "yes" : "no"}
          </p>
          <ScrollTable label={`Models of ${p.name || p.id}`}>
            <thead>
              <tr><th scope="col">Model</th><th scope="col">Streaming</th><th scope="col">Word timestamps</th><th scope="col">Cloning</th><th scope="col">Speed</th><th scope="col">Formats</th><th scope="col" class="num">Max chars</th></tr>
            </thead>
            <tbody>
              {p.models.map((m) => (
                <tr key={m.id}>
                  <th scope="row">{m.name && m.name !== m.id ? `${m.name} (${m.id})` : m.id}</th>
                  <td>{yes(m.capabilities.streaming)}</td><td>{yes(m.capabilities.timestamps)}</td><td>{yes(m.capabilities.cloning)}</td>
                  <td>{m.native_speed_range ? `native ${Number(m.native_speed_range[0]).toFixed(2)}–${Number(m.native_speed_range[1]).toFixed(2)}×` : yes(m.capabilities.speed)}</td>
                  <td>{(m.output_formats || []).join(", ")}</td><td class="num">{m.max_text_chars}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        </section>
      ))}
    </div>
  );
}
