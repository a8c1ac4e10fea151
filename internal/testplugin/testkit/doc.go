// Package testkit is the provider the gateway's own tests run against:
// provider "testkit", models "test" (streaming, timestamps, cloning,
// native speed) and "basic" (none of them), voices "alpha" and "beta". It
// renders each word as a tone (16-bit PCM, 16 kHz native, or WAV) with
// exact word timestamps, and misbehaves on request through
// providerOptions:
//
//	{"hang": true}                 block until the call's context ends
//	{"crash": true}                exit the process (status 3) mid-call
//	{"panic": true}                panic inside the call
//	{"fail": {"kind": "upstream", "status": 500, "code": "boom",
//	          "retryable": true, "retry_after_ms": 0, "message": "..."}}
//	                               return that *sdk.Error (kind names as
//	                               sdk.ErrorKind.String)
//	{"after_chunks": N}            in Stream, misbehave after N chunks (a
//	                               crash then waits 200 ms so that the
//	                               chunks most likely reach the host)
//	{"slow_stream_ms": 50}         pause before every chunk but the first
//	{"pad_ms": 1000}               append silence (large clips)
//	{"warnings": ["..."]}          return these warnings
//	{"silent": true}               render silence (cheap; for benchmarks)
//
// Settings (Configure): `call_log` names a file that gets one JSON line per
// call (package calllog reads it), `max_text_chars` sets the models' limit
// (default 1000), `output_formats` their formats ("pcm,wav" by default; the
// first is what a request naming none gets), a non-empty `fail_configure`
// makes Configure fail.
//
// The testplugin command serves Provider as a plugin process (and
// Moderator, in its moderator mode), which is how the end-to-end tests
// meet it. Unit tests use a Provider in process, as the sdk.Provider value
// of a catalog, with no process and no gRPC between: everything above
// behaves the same there except "crash" and "panic", which would take the
// test binary down with them (sdk.Serve is what turns a panic into an
// error), so in-process tests must not ask for them.
package testkit
