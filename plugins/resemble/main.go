// Command resemble is the voxgate provider plugin for Resemble AI
// text-to-speech (POST /synthesize and /stream on Resemble's synthesis
// host): the Chatterbox models, whole clips with word timestamps, WAV
// streams, the voice list and rapid voice cloning from recordings. See
// README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
