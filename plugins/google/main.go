// Command google is the voxgate provider plugin for Gemini speech
// generation (the Gemini API's TTS models): whole clips from
// generateContent, streams from streamGenerateContent, and the documented
// prebuilt voices. See README.md for settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
