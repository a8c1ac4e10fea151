// Command beep is an example voxgate provider plugin: a toy synthesizer that
// says each word as a short beep. It shows everything a real plugin does —
// describing itself, listing voices, whole-clip synthesis with word
// timestamps, streaming, typed errors — with nothing but the sdk package and
// the standard library. Copy it to start a plugin of your own.
package main

import "github.com/voxgate/voxgate/sdk"

func main() {
	sdk.Serve(&Beep{})
}
