// Drives a running voxgate with the public @speech-sdk/core gateway client,
// unmodified: the proof that voxgate's wire shapes are the client's.
// Usage: VOXGATE_URL=http://127.0.0.1:8080/v1 VOXGATE_KEY=vxk_... node client.mjs
import { generateSpeech, generateConversation, streamSpeech, ApiError } from "@speech-sdk/core";
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
