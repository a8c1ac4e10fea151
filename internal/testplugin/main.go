// Command testplugin serves the test kit (package testkit) as a provider
// plugin: the one the gateway's end-to-end tests start as a process. The
// package comment of testkit says what it renders and how it misbehaves
// on request.
//
// Started with VOXGATE_TESTPLUGIN_MODE=moderator it serves the kit's
// Moderator instead.
package main

import (
	"os"

	"github.com/voxgate/voxgate/internal/testplugin/testkit"
	"github.com/voxgate/voxgate/sdk"
)

func main() {
	if os.Getenv("VOXGATE_TESTPLUGIN_MODE") == "moderator" {
		sdk.ServeModerator(&testkit.Moderator{})
		return
	}
	sdk.Serve(testkit.NewProvider())
}
