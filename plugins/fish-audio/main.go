// Command fish-audio is the voxgate provider plugin for Fish Audio
// text-to-speech (POST /v1/tts, models s2.1-pro, s2.1-pro-free, s2-pro and
// s1): whole clips and streams in pcm, wav or mp3, word timestamps from
// /v1/tts/stream/with-timestamp, the voice model list and cloning by
// creating a voice model. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
