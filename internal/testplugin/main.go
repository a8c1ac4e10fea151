// Command testplugin is the provider plugin the gateway's own tests run
// against: provider "testkit", models "test" (streaming, timestamps,
// cloning, native speed) and "basic" (none of them), voices "alpha" and
// "beta". It renders each word as a tone (16-bit PCM, 16 kHz native, or
// WAV) with exact word timestamps, and misbehaves on request through
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
// Started with VOXGATE_TESTPLUGIN_MODE=moderator it serves a Moderator
// instead (see moderator.go).
package main

import (
	"os"

	"github.com/voxgate/voxgate/sdk"
)

func main() {
	if os.Getenv("VOXGATE_TESTPLUGIN_MODE") == "moderator" {
		sdk.ServeModerator(&moderator{})
		return
	}
	sdk.Serve(newProvider())
}
