// Command smallest-ai is the voxgate provider plugin for Smallest AI's
// Waves text-to-speech (Lightning v3.1 models): whole clips from
// POST /tts, streams from the server-sent events of POST /tts/live, the
// voice list and voice cloning. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
