// Command mistral is the voxgate provider plugin for Mistral's speech API
// (Voxtral TTS, POST /v1/audio/speech): whole clips and streams in pcm,
// wav or mp3, the voice list, and voice cloning by saving a voice. See
// README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
