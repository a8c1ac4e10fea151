package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMemoryStorage: with storage.driver memory the gateway starts and
// serves as with a file, says at start, as a warning, that everything is
// lost at exit, and keeps nothing across a restart; a development key is
// printed on every start (each is a first), and the CLI, which cannot open
// another process's memory, goes through the running gateway's socket or
// refuses, never writing a key into a store that vanishes.
func TestMemoryStorage(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, true)
	yaml, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(yaml), "storage:\n", "storage:\n  driver: memory\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	if _, stderr, code := cli(t, "keys", "create", "--config", cfg, "--org", "acme"); code == 0 || !strings.Contains(stderr, "storage.driver is memory") || !strings.Contains(stderr, "voxgate serve") {
		t.Fatalf("keys create with no gateway running: code %d, %q; want a refusal saying to start it", code, stderr)
	}

	s := startServe(t, cfg)
	key := devKey(t, s)
	if st, body := post(t, s.addr, "/v1/voices", key, `{"title":"Ephemeral","provider":"espeak","model":"espeak-ng","voice_id":"en"}`); st != 201 {
		t.Fatalf("create voice: %d %s", st, body)
	}
	if st, body := get(t, s.addr, "/v1/voices", key); st != 200 || !strings.Contains(body, `"Ephemeral"`) {
		t.Fatalf("list voices: %d %s", st, body)
	}
	// While it serves, the CLI reaches the gateway's memory through its
	// admin socket.
	out, stderr, code := cli(t, "keys", "create", "--config", cfg, "--org", "acme")
	key2 := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key2, "vxk_") {
		t.Fatalf("keys create while serving: %d %q %q", code, out, stderr)
	}
	if st, _ := get(t, s.addr, "/v1/voices", key2); st != 200 {
		t.Fatalf("the key made through the socket: %d", st)
	}
	s.stop(t)
	logs := s.logs.String()
	if !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, "STORAGE IS IN MEMORY ONLY") || !strings.Contains(logs, "lost when this process exits") {
		t.Errorf("the start-up log does not warn that the data is lost at exit:\n%s", tailString(logs, 4000))
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "voxgate.db")); err == nil {
		t.Error("a bbolt file was written")
	}

	// A restart starts empty: the keys are gone, a new development key is
	// printed, and it sees no voice.
	s = startServe(t, cfg)
	for _, k := range []string{key, key2} {
		if st, _ := get(t, s.addr, "/v1/voices", k); st != 401 {
			t.Errorf("a key of the previous run answers %d, want 401", st)
		}
	}
	fresh := devKey(t, s)
	if fresh == key {
		t.Error("the same development key after a restart")
	}
	if st, body := get(t, s.addr, "/v1/voices", fresh); st != 200 || strings.Contains(body, "Ephemeral") {
		t.Errorf("voices after a restart: %d %s", st, body)
	}
}

// devKey returns the development key the gateway printed.
func devKey(t *testing.T, s *server) string {
	t.Helper()
	banner := s.banner()
	i := strings.Index(banner, "vxk_")
	if i < 0 {
		t.Fatalf("no development key printed: %q", banner)
	}
	return strings.Fields(banner[i:])[0]
}
