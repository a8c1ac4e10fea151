// Drives a running voxgate with the public @speech-sdk/core gateway client,
// unmodified: the proof that voxgate's wire shapes are the client's.
// Usage: VOXGATE_URL=http://127.0.0.1:8080/v1 VOXGATE_KEY=vxk_... node client.mjs
import { generateSpeech, generateConversation, streamSpeech, timestampsToCaptions, ApiError } from "@speech-sdk/core";
import { createSpeechGateway } from "@speech-sdk/core/providers";

const gateway = createSpeechGateway({ apiKey: process.env.VOXGATE_KEY, baseURL: process.env.VOXGATE_URL });
const results = {};

const speech = await generateSpeech({ model: gateway("espeak/espeak-ng"), voice: "en", text: "Hello from the speech SDK." });
results.speech = {
  mediaType: speech.audio.mediaType, bytes: speech.audio.uint8Array.length,
  durationMs: speech.metadata.audioDurationMs ?? 0, // the client measures it from the file
};

const timed = await generateSpeech({
  model: gateway("espeak/espeak-ng"), voice: "en", text: "Words with timings.", timestamps: true,
  output: { format: "mp3", bitrate: 64 }, volumeDbfs: -18,
});
results.timestamps = { mediaType: timed.audio.mediaType, words: (timed.timestamps ?? []).map((w) => w.text) };

const stream = await streamSpeech({ model: gateway("espeak/espeak-ng"), voice: "en", text: "A streamed sentence arrives in pieces." });
let chunks = 0, streamed = 0;
const reader = stream.audio.getReader();
for (let r = await reader.read(); !r.done; r = await reader.read()) { chunks++; streamed += r.value.length; }
results.stream = { mediaType: stream.mediaType, chunks, bytes: streamed };

const convo = await generateConversation({
  model: gateway("espeak/espeak-ng"), timestamps: true, gapMs: 200,
  turns: [{ voice: "en", text: "Good morning." }, { voice: "en-us", text: "Good morning to you." }],
});
results.conversation = {
  mediaType: convo.audio.mediaType,
  turns: [...new Set((convo.timestamps ?? []).map((w) => w.turnIndex))],
  words: (convo.timestamps ?? []).length,
};

// Word timestamps for a model that has none of its own: the gateway
// aligns them, and says so in a warning.
const aligned = await generateSpeech({
  model: gateway("openai/tts-1"), voice: "alloy", timestamps: true,
  text: "Every morning the old keeper climbed the stairs and polished the great lens.",
});
results.aligned = {
  words: (aligned.timestamps ?? []).map((w) => w.text),
  ordered: (aligned.timestamps ?? []).every((w, i, a) => w.end >= w.start && (i === 0 || w.start >= a[i - 1].end)),
  warnings: aligned.warnings ?? [],
};

// A text longer than the model takes in one call: the gateway splits it.
const long = process.env.VOXGATE_LONG_TEXT;
const longSpeech = await generateSpeech({ model: gateway("espeak/espeak-ng"), voice: "en", text: long, timestamps: true });
const longWords = longSpeech.timestamps ?? [];
results.long = {
  chars: long.length,
  words: longWords.length,
  lastEnd: longWords.length ? longWords[longWords.length - 1].end : 0,
  mediaType: longSpeech.audio.mediaType,
  bytes: longSpeech.audio.uint8Array.length,
};

// Audio tags the model cannot perform: removed, and the warnings reach
// the caller.
const tagged = await generateSpeech({
  model: gateway("espeak/espeak-ng"), voice: "en", timestamps: true,
  text: "[laughs] That was funny. [whispers] Really.",
});
results.tags = { words: (tagged.timestamps ?? []).map((w) => w.text), warnings: tagged.warnings ?? [] };

// Captions: the client's own from the gateway's timestamps, and the
// gateway's (the client has no field for them, so plain fetch).
const captionText = "Hello there, friend. This sentence becomes a caption of its own.";
const captioned = await generateSpeech({ model: gateway("espeak/espeak-ng"), voice: "en", text: captionText, timestamps: true });
const res = await fetch(`${process.env.VOXGATE_URL}/audio/speech/with-timestamps`, {
  method: "POST",
  headers: { Authorization: `Bearer ${process.env.VOXGATE_KEY}`, "Content-Type": "application/json" },
  body: JSON.stringify({ model: "espeak/espeak-ng", voice: "en", text: captionText, captions: "vtt" }),
});
results.captions = {
  client: timestampsToCaptions(captioned.timestamps ?? [], { format: "srt" }),
  gateway: (await res.json()).captions,
};

try {
  await generateSpeech({ model: gateway("espeak/no-such-model"), voice: "en", text: "x" });
  results.error = "no error";
} catch (e) {
  results.error = e instanceof ApiError ? { status: e.statusCode, code: e.code } : String(e);
}
try {
  await generateSpeech({ model: gateway("espeak/espeak-ng"), voice: "en", text: "VOXGATE-MODERATION-TEST" });
  results.blocked = "no error";
} catch (e) {
  results.blocked = e instanceof ApiError ? { status: e.statusCode, code: e.code } : String(e);
}
console.log(JSON.stringify(results));
