package api

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// jsclientConfig is harness.SpeechConfig with acme moderated by the built-in
// check, so the client meets a moderation block too.
var jsclientConfig = strings.Replace(harness.SpeechConfig, "  acme:\n", "  acme:\n    moderation: standard\n", 1) + `
moderation:
  rulesets:
    standard:
      checks: [{builtin: {}}]
`

// TestPublicJSClient runs the unmodified public @speech-sdk/core client
// (test/jsclient, installed by `make test`) against a real gateway: speech,
// timestamps with whole-clip output, streaming, a conversation, aligned
// timestamps for an OpenAI model, a 12,000-character text, audio tags
// with their warnings, captions and a problem code all go through the
// client's own parsing.
func TestPublicJSClient(t *testing.T) {
	t.Parallel()
	dir := harness.Path(t, "test", "jsclient")
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "@speech-sdk", "core")); err != nil || statErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or test/jsclient/node_modules missing (make test installs them): %v %v", err, statErr)
		}
		t.Skip("node or test/jsclient/node_modules missing: run `make test`")
	}
	// An OpenAI fake that speaks real speech, for aligned timestamps.
	oai := openai.New(t, fakeupstream.Options{Voice: harness.NewESpeakVoice(t, "en-us+f2", 1.1)})
	cfg := strings.Replace(jsclientConfig, "max_body_bytes: 65536", "max_body_bytes: 1048576", 1)
	cfg = strings.Replace(cfg, "providers:\n", "providers:\n  openai: {plugin: voxgate-openai, base_url: \""+oai.BaseURL()+"\", api_key: \""+openai.Key+"\", managed: true}\n", 1)
	cfg = strings.Replace(cfg, "      testkit: {enabled: true}\n", "      testkit: {enabled: true}\n      openai: {enabled: true}\n", 1)
	tg := harness.Start(t, cfg)
	long := harness.LongText(12100) // 12,000 characters or a few more, ending a sentence
	cmd := exec.Command(node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VOXGATE_URL="+harness.ValidatingProxy(t, tg.Base)+"/v1", "VOXGATE_KEY="+tg.Keys["acme"], "VOXGATE_LONG_TEXT="+long)
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
		Aligned struct {
			Words    []string
			Ordered  bool
			Warnings []string
		}
		Long struct {
			Chars, Words, Bytes int
			LastEnd             float64
			MediaType           string
		}
		Tags struct {
			Words    []string
			Warnings []string
		}
		Captions struct {
			Client, Gateway string
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
	if strings.Join(res.Aligned.Words, " ") != "Every morning the old keeper climbed the stairs and polished the great lens" || !res.Aligned.Ordered ||
		len(res.Aligned.Warnings) != 1 || !strings.Contains(res.Aligned.Warnings[0], "aligned by the gateway") {
		t.Errorf("aligned %+v", res.Aligned)
	}
	// A long text is joined from pieces and answered in the model's
	// default, WAV (44 bytes of header, then 16-bit samples).
	seconds := float64(res.Long.Bytes-44) / 2 / 22050
	if res.Long.Chars < 12000 || res.Long.Chars != len(long) || res.Long.Words != len(strings.Fields(long)) ||
		res.Long.MediaType != "audio/wav" || seconds < 500 || math.Abs(res.Long.LastEnd-seconds) > 2 {
		t.Errorf("long text %+v (%.1f s)", res.Long, seconds)
	}
	wantTags := "Audio tag [laughs] is not supported by espeak/espeak-ng and was removed.|Audio tag [whispers] is not supported by espeak/espeak-ng and was removed."
	if strings.Join(res.Tags.Words, " ") != "That was funny Really" || strings.Join(res.Tags.Warnings, "|") != wantTags {
		t.Errorf("tags %+v", res.Tags)
	}
	if !strings.HasPrefix(res.Captions.Client, "1\n00:00:00,") || !strings.Contains(res.Captions.Client, "Hello there friend") ||
		!strings.HasPrefix(res.Captions.Gateway, "WEBVTT\n\n1\n00:00:00.") || !strings.Contains(res.Captions.Gateway, "\nHello there, friend.\n\n2\n") ||
		!strings.Contains(res.Captions.Gateway, "\nThis sentence becomes a caption of its\nown.\n") {
		t.Errorf("captions:\nclient:\n%s\ngateway:\n%s", res.Captions.Client, res.Captions.Gateway)
	}
}
