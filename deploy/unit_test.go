// Package deploy holds what runs voxgate under a service manager, and the
// test that checks it with the manager's own tool.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitVerifies runs `systemd-analyze verify` on deploy/voxgate.service.
// The unit names /opt/voxgate/voxgate, which this machine does not have,
// so the check runs on a copy pointing at a stand-in executable: verify
// refuses a unit whose binary is missing, and otherwise checks every
// directive's name and value.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd; `make deps` installs it)")
	}
	unit, err := os.ReadFile("voxgate.service")
	if err != nil {
		t.Fatal(err)
	}
	text := string(unit)
	for _, want := range []string{
		"ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure", "NoNewPrivileges=yes", "ProtectSystem=strict",
		"StateDirectory=voxgate", "ReadWritePaths=/var/lib/voxgate", "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "LockPersonality=yes", "CapabilityBoundingSet=\n", "Type=notify",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the unit lacks %q", strings.TrimSpace(want))
		}
	}
	dir := t.TempDir()
	stand := filepath.Join(dir, "voxgate")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "voxgate.service")
	if err := os.WriteFile(copyPath, []byte(strings.ReplaceAll(text, "/opt/voxgate/voxgate", stand)), 0o644); err != nil {
		t.Fatal(err)
	}
	// --man=no: the unit's Documentation= is a URL, not a man page this
	// machine would have.
	out, err := exec.Command(analyze, "verify", "--man=no", copyPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
