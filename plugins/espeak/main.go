// Command voxgate-espeak is voxgate's default, offline text-to-speech
// provider plugin: eSpeak NG through libespeak-ng. The gateway starts it
// and talks to it over gRPC; it renders each request in a process of its
// own (see engine and README.md).
package main

import (
	"fmt"
	"os"

	"github.com/voxgate/voxgate/plugins/espeak/engine"
	"github.com/voxgate/voxgate/sdk"
)

func main() {
	p, err := engine.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "voxgate-espeak:", err)
		os.Exit(1)
	}
	sdk.Serve(p)
}
