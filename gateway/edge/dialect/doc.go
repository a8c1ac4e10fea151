// Package dialect maps other speech APIs' requests and answers onto
// voxgate's own, so that code written for them runs against voxgate
// unchanged: OpenAI's POST /v1/audio/speech, GET /v1/models and
// /v1/models/{model}, and ElevenLabs' text-to-speech (with its streams
// and timings), voices (listed, searched and paged, one by id) and models
// under /elevenlabs.
//
// A dialect request decodes into this package's types, becomes a
// speech.Request (through the configured model and voice aliases) that
// the same speech use cases run, and the outcome is encoded back in the
// dialect's shapes, errors included. Nothing here talks to a provider,
// the store or the network: handlers in gateway/edge do the I/O.
package dialect
