//go:build !linux

package pluginhost

import "os/exec"

// dieWithParent has no kernel support outside Linux; sdk.Serve's watch of
// its parent ends the plugin there.
func dieWithParent(*exec.Cmd) {}
