// Package dialects holds the end-to-end tests of the OpenAI and ElevenLabs dialects
// and of the hosted service's documented API: request and error shapes,
// the documentation's own curl examples, and the official OpenAI and
// ElevenLabs SDKs run against the gateway.
package dialects
