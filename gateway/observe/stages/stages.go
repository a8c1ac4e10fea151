// Package stages names the stages of a speech request that the gateway
// marks as runtime/trace regions, so that an execution trace (the admin
// socket's /debug/pprof/trace) says where a request's time goes, stage by
// stage, on the real request path. `make bench` (cmd/voxbench) records
// one over sequential streams and reports the median of each stage.
//
// A region costs an atomic load while no trace is being recorded.
package stages

// The stages, in the order a stream passes them. Between two stages is
// fasthttp's own work (reading the request before Prologue, writing the
// response's headers before FirstWrite) or glue too small to name.
const (
	// Prologue: request id, the configuration's hold, the body.
	Prologue = "edge.prologue"
	// Auth: the route's exchange and the API key's check.
	Auth = "edge.auth"
	// Decode: the JSON body into a speech request.
	Decode = "edge.decode"
	// Prepare: validation and resolution (model, voice, options, rules,
	// credentials).
	Prepare = "speech.prepare"
	// Moderate: moderation and the request's log row.
	Moderate = "speech.moderate"
	// Admit: the response cache, the stream slot and the budgets.
	Admit = "speech.admit"
	// Plan: the provider call's deadline, metrics and planned request.
	Plan = "provider.plan"
	// Send: the provider request written and its answer's headers read;
	// mostly the provider's own time.
	Send = "provider.send"
	// FirstAudio: the first audio read from the provider's answer.
	FirstAudio = "speech.first-audio"
	// Answer: the response's headers, provenance and relay set up.
	Answer = "edge.answer"
	// FirstWrite: the first audio written to the client.
	FirstWrite = "edge.first-write"
)

// Order returns the stages in the order a stream passes them.
func Order() []string {
	return []string{Prologue, Auth, Decode, Prepare, Moderate, Admit, Plan, Send, FirstAudio, Answer, FirstWrite}
}
