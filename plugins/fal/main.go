// Command fal is the voxgate provider plugin for text-to-speech models
// hosted on fal (the synchronous API, POST https://fal.run/{model_id}):
// the answer names an audio file, which the plugin downloads. See
// README.md for settings, the model list and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
