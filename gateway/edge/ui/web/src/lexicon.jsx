import { useEffect, useState } from "preact/hooks";
import { getJSON, sendJSON } from "./api.js";
import { ErrorText, ScrollTable } from "./shared.jsx";
import { b64ToBlob } from "./playground.jsx";

// pronunciation is what a rule says about its word, as text.
function pronunciation(r) {
  if (r.kind === "phoneme") return `${r.alphabet === "cmu" ? "CMU" : "IPA"}: ${r.phoneme}` + (r.replacement ? ` (stand-in “${r.replacement}”)` : "");
  return `“${r.replacement}”`;
}

// inlineRule is a dictionary rule as a request's inline rule.
function inlineRule(r) {
  const out = { word: r.word, caseSensitive: r.case_sensitive, kind: r.kind || "alias" };
  if (r.replacement) out.replacement = r.replacement;
  if (r.kind === "phoneme") Object.assign(out, { alphabet: r.alphabet, phoneme: r.phoneme });
  return out;
}

// Lexicon lists the organization's pronunciation dictionaries and their
// rules with each rule's kind, and plays a rule's word with the rule and
// without it (an inline rule speaking the word as written overrides the
// stored one), on a model the user chooses.
export function Lexicon() {
  const [dicts, setDicts] = useState(null);
  const [dict, setDict] = useState("");
  const [rules, setRules] = useState(null);
  const [model, setModel] = useState("espeak/espeak-ng");
  const [voice, setVoice] = useState("en");
  const [clip, setClip] = useState(null);
  const [error, setError] = useState("");

  useEffect(() => {
    getJSON("/v1/pronunciation-dictionaries?limit=100")
      .then((p) => {
        setDicts(p.data || []);
        const d = (p.data || []).find((x) => x.is_default) || (p.data || [])[0];
        if (d) setDict(d.id);
      })
      .catch((e) => setError(e.message));
  }, []);
  useEffect(() => {
    if (!dict) return;
    setRules(null);
    getJSON(`/v1/pronunciation-dictionaries/${dict}/rules?limit=100`).then((p) => setRules(p.data || [])).catch((e) => setError(e.message));
  }, [dict]);

  async function play(r, withRule) {
    setError("");
    const rule = withRule ? inlineRule(r) : { word: r.word, replacement: r.word, caseSensitive: r.case_sensitive };
    try {
      const res = await sendJSON("POST", "/v1/audio/speech/with-timestamps", { model, voice, text: r.word, pronunciations: { rules: [rule] } });
      if (clip) URL.revokeObjectURL(clip.url);
      setClip({ url: URL.createObjectURL(b64ToBlob(res.audio, res.mediaType)), label: `${r.word}, ${withRule ? "with" : "without"} its rule`, warnings: res.warnings || [] });
    } catch (e) {
      setError(e.message);
    }
  }

  if (!dicts) return error ? <ErrorText>{error}</ErrorText> : <p role="status">Loading…</p>;
  return (
    <div class="lexicon">
      <div class="filters">
        <label>Dictionary{" "}
          <select value={dict} onChange={(e) => setDict(e.currentTarget.value)}>
            {dicts.map((d) => <option key={d.id} value={d.id}>{d.name} ({d.rule_count})</option>)}
          </select>
        </label>
        <label>Model <input value={model} onInput={(e) => setModel(e.currentTarget.value)} /></label>
        <label>Voice <input value={voice} onInput={(e) => setVoice(e.currentTarget.value)} /></label>
      </div>
      <ErrorText>{error}</ErrorText>
      {clip && (
        <section class="card" aria-label="Played word">
          <p>{clip.label}</p>
          <audio controls autoPlay src={clip.url} aria-label={clip.label} />
          {clip.warnings.map((w) => <p key={w} class="warn">{w}</p>)}
        </section>
      )}
      {!rules ? <p role="status">Loading…</p> : rules.length === 0 ? <p>No rules in this dictionary.</p> : (
        <ScrollTable label="Rules">
          <thead>
            <tr><th scope="col">Word</th><th scope="col">Kind</th><th scope="col">Pronunciation</th><th scope="col">Case</th><th scope="col">Listen</th></tr>
          </thead>
          <tbody>
            {rules.map((r) => (
              <tr key={r.id}>
                <th scope="row">{r.word}</th>
                <td>{r.kind || "alias"}</td>
                <td>{pronunciation(r)}</td>
                <td>{r.case_sensitive ? "exact" : "any"}</td>
                <td>
                  <button type="button" onClick={() => play(r, true)} aria-label={`With rule: ${r.word}`}>With rule</button>{" "}
                  <button type="button" onClick={() => play(r, false)} aria-label={`Without rule: ${r.word}`}>Without rule</button>
                </td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
    </div>
  );
}
