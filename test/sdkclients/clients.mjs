// Drives a running voxgate with the official openai and
// @elevenlabs/elevenlabs-js SDKs, unmodified: the proof that voxgate's
// dialects are those APIs as their SDKs use them.
// Usage: VOXGATE_BASE=http://127.0.0.1:8080 VOXGATE_KEY=vxk_... node clients.mjs
// It prints one JSON object of what the SDKs saw; the Go test judges it.
import OpenAI from "openai";
import { Stream } from "openai/streaming";
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";

const base = process.env.VOXGATE_BASE;
const apiKey = process.env.VOXGATE_KEY;
const results = { openai: {}, elevenlabs: {} };

async function drain(stream) {
  let chunks = 0, bytes = 0;
  for await (const c of stream) { chunks++; bytes += c.length; }
  return { chunks, bytes };
}

// collect reads a stream to its end and returns its bytes as base64, for
// the Go test to decode.
async function collect(stream) {
  const parts = [];
  for await (const c of stream) parts.push(Buffer.from(c));
  const b = Buffer.concat(parts);
  return { chunks: parts.length, bytes: b.length, base64: b.toString("base64") };
}

// OpenAI, through the SDK's audio.speech.create.
const openai = new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0 });
const o = results.openai;
o.clips = {};
for (const format of ["mp3", "wav", "pcm", "opus", "flac"]) {
  const r = await openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Every format the gateway makes.", response_format: format });
  const b = Buffer.from(await r.arrayBuffer());
  o.clips[format] = { contentType: r.headers.get("content-type"), bytes: b.length, base64: b.toString("base64") };
}
const slow = await openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Speed changes the length.", response_format: "pcm" });
const fast = await openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Speed changes the length.", response_format: "pcm", speed: 2 });
o.speed = { normal: (await slow.arrayBuffer()).byteLength, double: (await fast.arrayBuffer()).byteLength };
const streamed = await openai.audio.speech.create({ model: "openai/tts-1", voice: "echo", input: "Read as it arrives.", response_format: "pcm" });
o.stream = await drain(streamed.body);
const sse = await openai.audio.speech.create({ model: "openai/tts-1", voice: "echo", input: "Events please.", response_format: "pcm", stream_format: "sse" });
o.sse = { deltas: 0, bytes: 0, done: null };
for await (const ev of Stream.fromSSEResponse(sse, new AbortController())) {
  if (ev.type === "speech.audio.delta") { o.sse.deltas++; o.sse.bytes += Buffer.from(ev.audio, "base64").length; }
  if (ev.type === "speech.audio.done") o.sse.done = ev.usage;
}
// The SDK's default response_format (mp3) as events, on eSpeak (tts-1 is
// an alias of espeak/espeak-ng), which does not stream MP3 itself: the
// gateway converts eSpeak's PCM stream.
const sseMp3 = await openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Events in the default format.", stream_format: "sse" });
const mp3Parts = [];
o.sseMp3 = { deltas: 0, done: null };
for await (const ev of Stream.fromSSEResponse(sseMp3, new AbortController())) {
  if (ev.type === "speech.audio.delta") { o.sseMp3.deltas++; mp3Parts.push(Buffer.from(ev.audio, "base64")); }
  if (ev.type === "speech.audio.done") o.sseMp3.done = ev.usage;
}
o.sseMp3.base64 = Buffer.concat(mp3Parts).toString("base64");
// AAC: no well-kept encoder in Debian, so the gateway refuses it; the SDK
// must show why.
try {
  await openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: "x", response_format: "aac" });
  o.aac = "no error";
} catch (e) {
  o.aac = e instanceof OpenAI.APIError ? { status: e.status, code: e.code, param: e.param, message: e.message } : String(e);
}
const models = await openai.models.list();
o.models = [];
for await (const m of models) o.models.push(m.id);
// models.retrieve: a provider/model id (which the SDK escapes: %2F),
// an alias, and an id that is not there, whose message the SDK must show.
o.retrieve = [(await openai.models.retrieve("espeak/espeak-ng")).id, (await openai.models.retrieve("tts-1")).id];
try {
  await openai.models.retrieve("no-such-model");
  o.retrieveMissing = "no error";
} catch (e) {
  o.retrieveMissing = e instanceof OpenAI.APIError ? { status: e.status, code: e.code, type: e.type, message: e.message } : String(e);
}
try {
  await openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: "x", response_format: "ogg" });
  o.error = "no error";
} catch (e) {
  o.error = e instanceof OpenAI.APIError ? { status: e.status, code: e.code, param: e.param, message: e.message } : String(e);
}

// ElevenLabs, through the SDK's textToSpeech, voices and models.
const eleven = new ElevenLabsClient({ apiKey, baseUrl: `${base}/elevenlabs`, maxRetries: 0 });
const el = results.elevenlabs;
el.clips = {};
for (const outputFormat of ["mp3_44100_128", "pcm_22050", "pcm_16000"]) {
  const audio = await eleven.textToSpeech.convert("narrator", { text: "Every format the gateway makes.", outputFormat });
  const { bytes } = await drain(audio);
  el.clips[outputFormat] = bytes;
}
// The other codecs of output_format, decoded by the Go test.
el.more = {};
for (const outputFormat of ["ulaw_8000", "alaw_8000", "opus_48000_64", "mp3_22050_32"]) {
  el.more[outputFormat] = await collect(await eleven.textToSpeech.convert("narrator", { text: "Every format the gateway makes.", outputFormat }));
}
const fastEl = await eleven.textToSpeech.convert("narrator", { text: "Speed changes the length.", outputFormat: "pcm_22050", voiceSettings: { speed: 2 } });
const slowEl = await eleven.textToSpeech.convert("narrator", { text: "Speed changes the length.", outputFormat: "pcm_22050" });
el.speed = { normal: (await drain(slowEl)).bytes, double: (await drain(fastEl)).bytes };
el.stream = await drain(await eleven.textToSpeech.stream("narrator", { text: "A stream of audio.", outputFormat: "pcm_22050" }));
// The SDK's default stream call (no outputFormat: mp3_44100_128) on eSpeak,
// which streams neither MP3 nor 44.1 kHz: converted by the gateway.
el.streamDefault = await collect(await eleven.textToSpeech.stream("narrator", { text: "A stream in the default format." }));
const ts = await eleven.textToSpeech.convertWithTimestamps("narrator", { text: "Timed characters.", outputFormat: "pcm_22050" });
el.timestamps = { audioBytes: Buffer.from(ts.audioBase64, "base64").length, characters: ts.alignment.characters.join(""), ends: ts.alignment.characterEndTimesSeconds };
// stream/with-timestamps: the SDK's own parser reads the objects.
const tsParts = [];
el.streamTimestamps = { chunks: 0, characters: "", starts: [] };
for await (const c of await eleven.textToSpeech.streamWithTimestamps("narrator", { text: "Timed characters, streamed.", outputFormat: "pcm_22050" })) {
  el.streamTimestamps.chunks++;
  tsParts.push(Buffer.from(c.audioBase64, "base64"));
  if (c.alignment) {
    el.streamTimestamps.characters += c.alignment.characters.join("");
    el.streamTimestamps.starts.push(...c.alignment.characterStartTimesSeconds);
  }
}
el.streamTimestamps.base64 = Buffer.concat(tsParts).toString("base64");
el.voices = (await eleven.voices.getAll()).voices.map((v) => v.voiceId);
// voices.search (GET /v2/voices): a search, pages of one, a filter.
const found = await eleven.voices.search({ search: "narrat" });
el.search = { found: found.voices.map((v) => v.voiceId), total: found.totalCount };
const pages = [];
let token;
do {
  const page = await eleven.voices.search({ pageSize: 1, sort: "name", nextPageToken: token });
  pages.push(page.voices.map((v) => v.voiceId));
  token = page.hasMore ? page.nextPageToken : undefined;
} while (token && pages.length < 10);
el.search.pages = pages;
el.search.personal = (await eleven.voices.search({ voiceType: "personal" })).voices.map((v) => [v.voiceId, v.category]);
// voices.get (GET /v1/voices/{voice_id}): an alias, a saved voice, and
// one that is not there.
const alias = await eleven.voices.get("narrator");
const saved = await eleven.voices.get(process.env.VOXGATE_SAVED_VOICE);
el.voice = { alias: [alias.voiceId, alias.category], saved: [saved.voiceId, saved.name, saved.category] };
try {
  await eleven.voices.get("00000000-0000-4000-8000-000000000000");
  el.voiceMissing = "no error";
} catch (e) {
  el.voiceMissing = e instanceof ElevenLabsError ? { status: e.statusCode, message: e.message } : String(e);
}
el.models = (await eleven.models.list()).map((m) => m.modelId);
try {
  await eleven.textToSpeech.convert("narrator", { text: "x".repeat(6000) });
  el.error = "no error";
} catch (e) {
  el.error = e instanceof ElevenLabsError ? { status: e.statusCode, message: e.message } : String(e);
}
console.log(JSON.stringify(results));
