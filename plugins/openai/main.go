// Command openai is the voxgate provider plugin for OpenAI text-to-speech
// (POST /v1/audio/speech): models tts-1, tts-1-hd and gpt-4o-mini-tts,
// whole clips and streams in pcm, wav or mp3. See README.md for settings
// and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
