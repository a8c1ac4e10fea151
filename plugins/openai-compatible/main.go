// Command openai-compatible is the voxgate provider plugin for any server
// that speaks OpenAI's speech API (POST {base_url}/audio/speech):
// Kokoro-FastAPI, openedai-speech, LocalAI, vLLM and the like. Each
// deployment declares the server's models, voices and capabilities in its
// settings, and one binary can serve several providers under different
// ids. See README.md.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
