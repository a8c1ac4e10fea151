import { useEffect, useRef, useState } from "preact/hooks";
import { getJSON, query, request, sendJSON } from "./api.js";
import { ErrorText, ScrollTable, fmtTime, useCatalog } from "./shared.jsx";

export function Voices() {
  const [catalog, catalogError] = useCatalog();
  const [voices, setVoices] = useState(null);
  const [cursor, setCursor] = useState("");
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  // After a delete, the keyboard focus goes to the Delete button of the
  // row that took the deleted one's place (or the one above it), else to
  // the form below, instead of being lost with the removed button.
  const focusNext = useRef(null);
  useEffect(() => {
    if (!focusNext.current) return;
    const id = focusNext.current;
    focusNext.current = null;
    const row = [...document.querySelectorAll("tr[data-voice-id]")].find((tr) => tr.dataset.voiceId === id);
    const target = row ? row.querySelector("button.danger") : document.getElementById("create-title");
    if (target) target.focus();
  });

  async function load(after) {
    try {
      const page = await getJSON("/v1/voices" + query({ limit: 100, cursor: after }));
      setVoices((old) => (after ? (old || []).concat(page.data) : page.data));
      setCursor(page.has_more ? page.next_cursor : "");
    } catch (e) {
      setError(e.message);
    }
  }
  useEffect(() => { load(""); }, []);

  async function remove(v) {
    if (!confirm(`Delete the voice “${v.title}”?`)) return;
    setError("");
    try {
      await request("DELETE", "/v1/voices/" + encodeURIComponent(v.id));
      const i = voices.findIndex((x) => x.id === v.id);
      const next = voices[i + 1] || voices[i - 1];
      focusNext.current = next ? next.id : "-";
      setVoices((old) => old.filter((x) => x.id !== v.id));
      setNotice(`Deleted “${v.title}”.`);
    } catch (e) {
      setError(e.message);
    }
  }

  return (
    <div class="voices">
      <p class="meta" role="status" aria-live="polite">{notice}</p>
      <ErrorText>{error || catalogError}</ErrorText>
      {voices === null ? <p>Loading…</p> : voices.length === 0 ? <p class="empty">No saved voices yet.</p> : (
        <ScrollTable label="Saved voices">
          <thead>
            <tr><th scope="col">Title</th><th scope="col">Provider / model</th><th scope="col">Provider voice</th><th scope="col">Tags</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
          </thead>
          <tbody>
            {voices.map((v) => (
              <tr key={v.id} data-voice-id={v.id}>
                <th scope="row">{v.title}</th>
                <td>{v.provider}/{v.model}</td>
                <td><code>{v.voice_id}</code>{v.media_id ? " (cloned)" : ""}{v.consent ? <span class="hint" title={v.consent.statement}> consent: {v.consent.attested_by} ({v.consent.relation})</span> : ""}</td>
                <td>{(v.tags || []).join(", ") || "—"}</td>
                <td class="nowrap">{fmtTime(v.created_at)}</td>
                <td><button type="button" class="danger" onClick={() => remove(v)} aria-label={`Delete ${v.title}`}>Delete</button></td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
      {cursor && <p><button type="button" onClick={() => load(cursor)}>Load more</button></p>}
      {catalog && <CreateVoice catalog={catalog} onCreated={(v) => { setVoices((old) => [v].concat(old || [])); setNotice(`Created “${v.title}”.`); }} />}
    </div>
  );
}

function CreateVoice({ catalog, onCreated }) {
  const enabled = catalog.filter((p) => p.config && p.config.enabled);
  const [provider, setProvider] = useState(enabled[0] ? enabled[0].id : "");
  const p = catalog.find((x) => x.id === provider);
  const models = p ? p.models : [];
  const [model, setModel] = useState(models[0] ? models[0].id : "");
  const m = models.find((x) => x.id === model) || models[0];
  const canClone = !!(m && m.capabilities && m.capabilities.cloning);
  const [source, setSource] = useState("catalog");
  const [title, setTitle] = useState("");
  const [voiceId, setVoiceId] = useState("");
  const [tags, setTags] = useState("");
  const [description, setDescription] = useState("");
  const [providerVoices, setProviderVoices] = useState([]);
  const [sample, setSample] = useState(null); // {blob, name}
  // The consent attestation a clone needs (docs/provenance.md); kept
  // after a clone, since one person often attests several samples.
  const [attestedBy, setAttestedBy] = useState("");
  const [relation, setRelation] = useState("self");
  const [statement, setStatement] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const titleRef = useRef(null);

  useEffect(() => {
    if (!provider) return;
    const first = (catalog.find((x) => x.id === provider) || { models: [] }).models[0];
    setModel(first ? first.id : "");
    setProviderVoices([]);
    getJSON(`/v1/providers/${encodeURIComponent(provider)}/voices`)
      .then((r) => {
        const list = r.data || [];
        setProviderVoices(list);
        const en = list.find((v) => v.id === "en") || list.find((v) => (v.language || "").startsWith("en")) || list[0];
        setVoiceId(en ? en.id : "");
      })
      .catch(() => setProviderVoices([]));
  }, [provider]);
  useEffect(() => { if (!canClone && source === "clone") setSource("catalog"); }, [canClone]);

  async function submit(e) {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setError("");
    try {
      const body = { title: title.trim(), provider, model, tags: tags.split(",").map((t) => t.trim()).filter(Boolean) };
      if (description.trim()) body.description = description.trim();
      if (source === "clone") {
        if (!sample) throw new Error("Upload or record a sample to clone from.");
        const form = new FormData();
        form.append("file", sample.blob, sample.name);
        const media = await (await request("POST", "/v1/media", form)).json();
        body.mediaId = media.id;
        if (attestedBy.trim() || statement.trim()) {
          body.consent = { attested_by: attestedBy.trim(), relation: relation.trim(), statement: statement.trim() };
        }
      } else {
        body.voice_id = voiceId.trim();
      }
      const { data: v } = await sendJSON("POST", "/v1/voices", body); // {data: voice}
      setTitle("");
      setTags("");
      setDescription("");
      setSample(null);
      onCreated(v);
      // The focus goes back to the (now empty) title, for the next voice;
      // the status line above the list says what was created.
      if (titleRef.current) titleRef.current.focus();
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card create" onSubmit={submit} aria-labelledby="create-title">
      <h2 id="create-title" tabIndex={-1}>New voice</h2>
      <div class="grid">
        <div class="field">
          <label for="v-title">Title</label>
          <input id="v-title" ref={titleRef} required maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="v-provider">Provider</label>
          <select id="v-provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            {catalog.map((x) => <option key={x.id} value={x.id} disabled={!(x.config && x.config.enabled)}>{x.name || x.id}{x.config && x.config.enabled ? "" : " (not enabled)"}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="v-model">Model</label>
          <select id="v-model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
            {models.map((x) => <option key={x.id} value={x.id}>{x.name || x.id}</option>)}
          </select>
        </div>
        <fieldset class="field">
          <legend>Voice from</legend>
          <label class="check"><input type="radio" name="v-source" value="catalog" checked={source === "catalog"} onChange={() => setSource("catalog")} /> the provider's voices</label>
          <label class="check"><input type="radio" name="v-source" value="clone" checked={source === "clone"} disabled={!canClone} onChange={() => setSource("clone")} /> a cloned sample{canClone ? "" : " (this model cannot clone)"}</label>
        </fieldset>
        {source === "catalog" ? (
          <div class="field">
            <label for="v-voice">Provider voice</label>
            {providerVoices.length > 0 ? (
              <select id="v-voice" value={voiceId} onChange={(e) => setVoiceId(e.currentTarget.value)}>
                {providerVoices.map((v) => <option key={v.id} value={v.id}>{v.name && v.name !== v.id ? `${v.name} (${v.id})` : v.id}{v.language ? ` · ${v.language}` : ""}</option>)}
              </select>
            ) : (
              <input id="v-voice" required value={voiceId} onInput={(e) => setVoiceId(e.currentTarget.value)} placeholder="provider voice id" />
            )}
          </div>
        ) : (
          <>
            <Sample sample={sample} onSample={setSample} />
            <fieldset class="field wide">
              <legend>Consent of the speaker <span class="hint">(stored with the voice and signed into every clip made with it)</span></legend>
              <label for="v-consent-by">Attested by</label>
              <input id="v-consent-by" maxLength={200} value={attestedBy} onInput={(e) => setAttestedBy(e.currentTarget.value)} placeholder="who attests that the speaker agreed" />
              <label for="v-consent-relation">Relation to the speaker</label>
              <input id="v-consent-relation" maxLength={100} value={relation} onInput={(e) => setRelation(e.currentTarget.value)} placeholder="self, employer, agent, guardian…" />
              <label for="v-consent-statement">Statement</label>
              <input id="v-consent-statement" maxLength={2000} value={statement} onInput={(e) => setStatement(e.currentTarget.value)} placeholder="what they attest" />
            </fieldset>
          </>
        )}
        <div class="field">
          <label for="v-tags">Tags <span class="hint">(comma-separated)</span></label>
          <input id="v-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </div>
        <div class="field wide">
          <label for="v-desc">Description</label>
          <input id="v-desc" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </div>
      </div>
      <ErrorText>{error}</ErrorText>
      <button type="submit" disabled={!provider} aria-disabled={busy ? "true" : undefined}>{busy ? "Creating…" : "Create voice"}</button>
    </form>
  );
}

// Sample picks the audio to clone from: a WAV or MP3 file, or a
// recording made here (encoded as 16-bit WAV in the page, since the
// gateway takes WAV and MP3).
function Sample({ sample, onSample }) {
  const [recording, setRecording] = useState(false);
  const [error, setError] = useState("");
  const rec = useRef(null);

  async function start() {
    setError("");
    try {
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      const mr = new MediaRecorder(stream);
      const chunks = [];
      mr.ondataavailable = (e) => chunks.push(e.data);
      mr.onstop = async () => {
        stream.getTracks().forEach((t) => t.stop());
        try {
          const wav = await toWAV(new Blob(chunks, { type: mr.mimeType }));
          onSample({ blob: wav, name: "recording.wav" });
        } catch (e) {
          setError("The recording could not be converted: " + e.message);
        }
      };
      mr.start();
      rec.current = mr;
      setRecording(true);
    } catch (e) {
      setError("The microphone is not available: " + e.message);
    }
  }
  function stop() {
    rec.current && rec.current.stop();
    setRecording(false);
  }
  return (
    <div class="field wide">
      <label for="v-file">Sample to clone <span class="hint">(WAV or MP3, or record one)</span></label>
      <input id="v-file" type="file" accept="audio/wav,audio/x-wav,audio/mpeg,.wav,.mp3"
        onChange={(e) => { const f = e.currentTarget.files[0]; if (f) onSample({ blob: f, name: f.name }); }} />
      <div class="row">
        {/* One button that changes its label, so the focus stays on it. */}
        <button type="button" class={recording ? "danger" : "quiet"} onClick={recording ? stop : start}>{recording ? "Stop recording" : "Record a sample"}</button>
        {sample && <span class="meta">{sample.name} · {Math.round(sample.blob.size / 1024)} KiB</span>}
      </div>
      <ErrorText>{error}</ErrorText>
    </div>
  );
}

// toWAV decodes any recorded audio and writes it as 16-bit mono WAV.
async function toWAV(blob) {
  const ctx = new AudioContext();
  try {
    const buf = await ctx.decodeAudioData(await blob.arrayBuffer());
    const ch = buf.getChannelData(0);
    const out = new DataView(new ArrayBuffer(44 + ch.length * 2));
    const str = (o, s) => [...s].forEach((c, i) => out.setUint8(o + i, c.charCodeAt(0)));
    str(0, "RIFF"); out.setUint32(4, 36 + ch.length * 2, true); str(8, "WAVE");
    str(12, "fmt "); out.setUint32(16, 16, true); out.setUint16(20, 1, true); out.setUint16(22, 1, true);
    out.setUint32(24, buf.sampleRate, true); out.setUint32(28, buf.sampleRate * 2, true);
    out.setUint16(32, 2, true); out.setUint16(34, 16, true);
    str(36, "data"); out.setUint32(40, ch.length * 2, true);
    for (let i = 0; i < ch.length; i++) out.setInt16(44 + i * 2, Math.max(-1, Math.min(1, ch[i])) * 0x7fff, true);
    return new Blob([out.buffer], { type: "audio/wav" });
  } finally {
    ctx.close();
  }
}
