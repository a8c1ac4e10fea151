import { useEffect, useRef, useState } from "preact/hooks";
import { getJSON, sendJSON } from "./api.js";
import { ErrorText, useCatalog } from "./shared.jsx";

const SAMPLE = "Welcome to voxgate. Every word lights up as it is spoken.";

// The output formats the gateway encodes (README, "Speech"). The page
// plays a clip where the browser's audio element can (canPlayType); the
// raw formats have no header saying what the bytes are, so no browser
// plays them from a file: those, and any this browser lacks, are offered
// for download only, and the page says so.
const FORMATS = [
  { id: "wav", name: "WAV", type: "audio/wav" },
  { id: "mp3", name: "MP3", type: "audio/mpeg" },
  { id: "opus", name: "Opus", detail: "Ogg", type: 'audio/ogg; codecs="opus"' },
  { id: "flac", name: "FLAC", type: "audio/flac" },
  { id: "pcm", name: "PCM", detail: "raw 16-bit", raw: "raw 16-bit little-endian samples" },
  { id: "ulaw", name: "μ-law", detail: "raw G.711", raw: "raw G.711 μ-law samples at 8000 Hz" },
  { id: "alaw", name: "A-law", detail: "raw G.711", raw: "raw G.711 A-law samples at 8000 Hz" },
].map((f) => ({ ...f, playable: !f.raw && canPlay(f.type) }));

function canPlay(type) {
  try {
    return document.createElement("audio").canPlayType(type) !== "";
  } catch {
    return false;
  }
}

const formatOf = (id) => FORMATS.find((f) => f.id === id) || FORMATS[0];
const playableNames = FORMATS.filter((f) => f.playable).map((f) => f.name).join(", ");

// whyNotPlayable says why format f downloads but does not play here.
function whyNotPlayable(f) {
  return f.raw
    ? `${f.name} is ${f.raw} with no header, which the page cannot play.`
    : `This browser cannot play ${f.name} in the page.`;
}

export function b64ToBlob(b64, type) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type });
}

// curlFor renders the request as a command a user can run with their key.
function curlFor(body) {
  const json = JSON.stringify(body).replace(/'/g, "'\\''");
  return `curl -s ${location.origin}/v1/audio/speech/with-timestamps \\\n  -H "Authorization: Bearer $VOXGATE_KEY" -H 'Content-Type: application/json' \\\n  -d '${json}' | jq -r .audio | base64 -d > speech.${body.output ? body.output.format : "wav"}`;
}

export function Playground() {
  const [catalog, catalogError] = useCatalog();
  const enabled = (catalog || []).filter((p) => p.config && p.config.enabled);
  const [provider, setProvider] = useState("");
  const [model, setModel] = useState("");
  const [voice, setVoice] = useState("");
  const [providerVoices, setProviderVoices] = useState([]);
  const [saved, setSaved] = useState([]);
  const [text, setText] = useState(SAMPLE);
  const [speed, setSpeed] = useState(1);
  const [level, setLevel] = useState(false);
  const [volume, setVolume] = useState(-20);
  const [format, setFormat] = useState("wav");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [clip, setClip] = useState(null); // {url, words, format, body}
  const [current, setCurrent] = useState(-1);
  const audio = useRef(null);

  useEffect(() => {
    if (!provider && enabled[0]) setProvider(enabled[0].id);
  }, [catalog]);
  useEffect(() => {
    getJSON("/v1/voices?limit=200").then((p) => setSaved(p.data || [])).catch(() => {});
  }, []);
  const p = (catalog || []).find((x) => x.id === provider);
  const models = p ? p.models : [];
  const m = models.find((x) => x.id === model);
  useEffect(() => {
    if (!provider) return;
    const tsModel = models.find((x) => x.capabilities && x.capabilities.timestamps) || models[0];
    setModel(tsModel ? tsModel.id : "");
    getJSON(`/v1/providers/${encodeURIComponent(provider)}/voices`)
      .then((r) => {
        const list = r.data || [];
        setProviderVoices(list);
        const en = list.find((v) => v.id === "en") || list.find((v) => (v.language || "").startsWith("en")) || list[0];
        setVoice(en ? "p:" + en.id : "");
      })
      .catch(() => { setProviderVoices([]); setVoice(""); });
  }, [provider]);

  function body() {
    const b = { text };
    if (voice.startsWith("saved:")) b.voiceId = voice.slice(6);
    else { b.model = `${provider}/${model}`; b.voice = voice.slice(2); }
    if (Number(speed) !== 1) b.speed = Number(speed);
    if (level) b.volumeDbfs = Number(volume);
    b.output = { format };
    return b;
  }

  async function speak(e) {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setError("");
    try {
      const b = body();
      const res = await sendJSON("POST", "/v1/audio/speech/with-timestamps", b);
      if (clip) URL.revokeObjectURL(clip.url);
      const blob = b64ToBlob(res.audio, res.mediaType);
      setClip({ url: URL.createObjectURL(blob), words: res.timestamps || [], format, mediaType: res.mediaType, body: b, warnings: res.warnings || [] });
      setCurrent(-1);
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  }

  // Highlight the word being spoken: checked every frame while playing.
  useEffect(() => {
    const el = audio.current;
    if (!el || !clip) return;
    let raf = 0;
    const find = () => {
      const t = el.currentTime;
      let idx = -1;
      clip.words.forEach((w, i) => { if (t >= w.start) idx = i; });
      if (idx >= 0 && t > clip.words[idx].end + 0.25 && idx === clip.words.length - 1) idx = -1;
      setCurrent(idx);
    };
    const loop = () => { find(); raf = requestAnimationFrame(loop); };
    const play = () => { cancelAnimationFrame(raf); loop(); };
    const pause = () => { cancelAnimationFrame(raf); find(); };
    el.addEventListener("play", play);
    el.addEventListener("pause", pause);
    el.addEventListener("ended", pause);
    el.addEventListener("seeked", find);
    el.play().catch(() => {});
    return () => {
      cancelAnimationFrame(raf);
      el.removeEventListener("play", play);
      el.removeEventListener("pause", pause);
      el.removeEventListener("ended", pause);
      el.removeEventListener("seeked", find);
    };
  }, [clip]);

  const nativeRange = m && m.native_speed_range;
  const chosen = formatOf(format);
  const got = clip && formatOf(clip.format);
  return (
    <div class="playground">
      <ErrorText>{catalogError}</ErrorText>
      <form class="card" onSubmit={speak} aria-label="Speech request">
        <div class="grid">
          <div class="field">
            <label for="pg-provider">Provider</label>
            <select id="pg-provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
              {enabled.map((x) => <option key={x.id} value={x.id}>{x.name || x.id}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="pg-model">Model</label>
            <select id="pg-model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
              {models.map((x) => <option key={x.id} value={x.id}>{x.name || x.id}{x.capabilities && !x.capabilities.timestamps ? " (no word timestamps)" : ""}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="pg-voice">Voice</label>
            <select id="pg-voice" value={voice} onChange={(e) => setVoice(e.currentTarget.value)}>
              {saved.length > 0 && (
                <optgroup label="Saved voices">
                  {saved.map((v) => <option key={v.id} value={"saved:" + v.id}>{v.title} ({v.provider}/{v.voice_id})</option>)}
                </optgroup>
              )}
              <optgroup label={`${provider} voices`}>
                {providerVoices.map((v) => <option key={v.id} value={"p:" + v.id}>{v.name && v.name !== v.id ? `${v.name} (${v.id})` : v.id}</option>)}
              </optgroup>
            </select>
          </div>
          <div class="field">
            <label for="pg-format">Format</label>
            <select id="pg-format" value={format} onChange={(e) => setFormat(e.currentTarget.value)} aria-describedby="pg-format-hint">
              {FORMATS.map((f) => (
                <option key={f.id} value={f.id}>{f.name}{f.detail ? ` (${f.detail})` : ""}{f.playable ? "" : " · download only"}</option>
              ))}
            </select>
            <span id="pg-format-hint" class="hint">{chosen.playable ? "Plays in the page." : `Download only: ${whyNotPlayable(chosen)}`}</span>
          </div>
          <div class="field">
            <label for="pg-speed">Speed <output for="pg-speed">{Number(speed).toFixed(2)}×</output></label>
            <input id="pg-speed" type="range" min="0.25" max="4" step="0.05" value={speed} onInput={(e) => setSpeed(e.currentTarget.value)}
              aria-describedby="pg-speed-hint" />
            <span id="pg-speed-hint" class="hint">{nativeRange ? `native ${Number(nativeRange[0]).toFixed(2)}–${Number(nativeRange[1]).toFixed(2)}×, stretched beyond` : "0.25× to 4×"}</span>
          </div>
          <div class="field">
            <label class="check"><input type="checkbox" checked={level} onChange={(e) => setLevel(e.currentTarget.checked)} /> Normalize volume</label>
            <label for="pg-volume" class="sr-only">Volume in dBFS</label>
            <input id="pg-volume" type="number" min="-60" max="0" step="1" value={volume} disabled={!level}
              onInput={(e) => setVolume(e.currentTarget.value)} aria-describedby="pg-volume-hint" />
            <span id="pg-volume-hint" class="hint">dBFS, −60 to 0</span>
          </div>
          <div class="field full">
            <label for="pg-text">Text</label>
            <textarea id="pg-text" rows={4} required maxLength={(m && m.max_text_chars) || 5000} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </div>
        </div>
        <button type="submit" disabled={!text.trim() || !voice} aria-disabled={busy ? "true" : undefined}>{busy ? "Speaking…" : "Speak"}</button>
        <span class="sr-only" role="status">{busy ? "Speaking…" : clip ? `The ${got.name} clip is ready below.` : ""}</span>
      </form>
      <ErrorText>{error}</ErrorText>
      {clip && (
        <section class="card result" aria-labelledby="pg-result">
          <h2 id="pg-result">Result</h2>
          {got.playable ? (
            <audio ref={audio} controls src={clip.url} aria-label="Synthesized speech" />
          ) : (
            <p class="notice download-only">
              {whyNotPlayable(got)} Download it ({clip.mediaType}) to use it elsewhere, or choose {playableNames} to listen here.
            </p>
          )}
          <p class="words" aria-label={got.playable ? "Words, highlighted as they are spoken" : "Words"}>
            {clip.words.length === 0 && <span class="hint">This model returns no word timestamps.</span>}
            {clip.words.map((w, i) => {
              const lit = got.playable && i === current;
              return <span key={i} class={lit ? "word current" : "word"} data-index={i} aria-current={lit ? "true" : undefined}>{w.text} </span>;
            })}
          </p>
          {clip.warnings.length > 0 && <ul class="warnings">{clip.warnings.map((w) => <li key={w}>{w}</li>)}</ul>}
          <p><a class="button" href={clip.url} download={`voxgate-speech.${clip.format}`}>Download {got.name}</a></p>
          <h3>The same request with curl</h3>
          <pre class="curl" tabIndex={0} aria-label="curl command"><code>{curlFor(clip.body)}</code></pre>
          <button type="button" class="quiet" onClick={() => navigator.clipboard && navigator.clipboard.writeText(curlFor(clip.body))}>Copy command</button>
        </section>
      )}
    </div>
  );
}
