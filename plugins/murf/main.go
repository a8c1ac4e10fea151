// Command murf is the voxgate provider plugin for Murf text-to-speech
// (POST /v1/speech/generate and /v1/speech/stream): the GEN2 and FALCON
// models, whole clips with word timestamps (GEN2), streams, native speed
// and the voice list. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
