// Package testenv holds what tests of several packages need from the
// machine they run on.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// NeedTool returns the path of a command a test needs (ffprobe, ffmpeg,
// ...). make test installs them, so under CI a missing one fails the test
// instead of skipping it silently; elsewhere the test is skipped.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not installed (make test installs it)", name)
		}
		t.Skipf("%s not installed: run `make test`", name)
	}
	return path
}
