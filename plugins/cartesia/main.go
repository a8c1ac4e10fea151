// Command cartesia is the voxgate provider plugin for Cartesia
// text-to-speech (Sonic models): whole clips from /tts/bytes, streams and
// word timestamps from /tts/sse, the voice list and voice cloning. See
// README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
