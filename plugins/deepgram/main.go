// Command deepgram is the voxgate provider plugin for Deepgram's Aura
// text-to-speech: clips and streams from /v1/speak (which the gateway may
// send itself, as planned requests) and the voice list from /v1/models.
// See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
