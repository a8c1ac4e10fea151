// Command hume is the voxgate provider plugin for Hume's Octave
// text-to-speech: clips from /v0/tts/file and streams from
// /v0/tts/stream/file (both planned), word timestamps from /v0/tts, and
// the voice list. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
