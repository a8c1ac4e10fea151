// Command inworld is the voxgate provider plugin for Inworld text-to-speech
// (POST /tts/v1/voice and /tts/v1/voice:stream): the inworld-tts models,
// whole clips with word timestamps, streams, native speed, the voice list
// and instant voice cloning. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
