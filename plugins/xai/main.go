// Command xai is the voxgate provider plugin for xAI's text-to-speech API
// (POST /v1/tts): whole clips and streams in pcm, wav or mp3, and the
// voice list. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
