package gateway_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jsclientConfig is speechConfig with acme moderated by the built-in
// check, so the client meets a moderation block too.
var jsclientConfig = strings.Replace(speechConfig, "  acme:\n", "  acme:\n    moderation: standard\n", 1) + `
moderation:
  rulesets:
    standard:
      checks: [{builtin: {}}]
`

// TestPublicJSClient runs the unmodified public @speech-sdk/core client
// (test/jsclient, installed by `make test`) against a real gateway: speech,
// timestamps with whole-clip output, streaming, a conversation and a
// problem code all go through the client's own parsing.
func TestPublicJSClient(t *testing.T) {
	dir, _ := filepath.Abs("../test/jsclient")
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "@speech-sdk", "core")); err != nil || statErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or test/jsclient/node_modules missing (make test installs them): %v %v", err, statErr)
		}
		t.Skip("node or test/jsclient/node_modules missing: run `make test`")
	}
	tg := startGateway(t, jsclientConfig)
	cmd := exec.Command(node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VOXGATE_URL="+validatingProxy(t, tg.base)+"/v1", "VOXGATE_KEY="+tg.keys["acme"])
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("client: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		Speech struct {
			MediaType  string
			Bytes      int
			DurationMs int
		}
		Timestamps struct {
			MediaType string
			Words     []string
		}
		Stream struct {
			MediaType string
			Chunks    int
			Bytes     int
		}
		Conversation struct {
			MediaType string
			Turns     []int
			Words     int
		}
		Error, Blocked struct {
			Status int
			Code   string
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	if res.Speech.MediaType != "audio/wav" || res.Speech.Bytes < 20000 || res.Speech.DurationMs < 500 {
		t.Errorf("speech %+v", res.Speech)
	}
	if res.Timestamps.MediaType != "audio/mpeg" || strings.Join(res.Timestamps.Words, " ") != "Words with timings" {
		t.Errorf("timestamps %+v", res.Timestamps)
	}
	if res.Stream.Bytes < 20000 || res.Stream.MediaType != "audio/wav" {
		t.Errorf("stream %+v", res.Stream)
	}
	if res.Conversation.MediaType != "audio/wav" || len(res.Conversation.Turns) != 2 || res.Conversation.Words != 6 {
		t.Errorf("conversation %+v", res.Conversation)
	}
	if res.Error.Status != 422 || res.Error.Code != "unknown_model" {
		t.Errorf("error %+v", res.Error)
	}
	// A moderation block keeps its own envelope; the client still reads
	// its code.
	if res.Blocked.Status != 422 || res.Blocked.Code != "content_moderation_blocked" {
		t.Errorf("blocked %+v", res.Blocked)
	}
}
