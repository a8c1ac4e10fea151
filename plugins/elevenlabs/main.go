// Command elevenlabs is the voxgate provider plugin for ElevenLabs
// text-to-speech: whole clips, streams, word timestamps (from the
// character alignment of /with-timestamps) and instant voice cloning. See
// README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
