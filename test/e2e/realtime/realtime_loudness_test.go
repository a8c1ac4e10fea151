package realtime

import (
	"math"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestRealtimeOrgLoudness: an organization's loudness default levels its
// realtime contexts of raw PCM as it levels its streams, on the sentence
// path (eSpeak streamed, and rendered whole with timestamps) and on a
// bridged ElevenLabs context, within ±1 LU as FFmpeg measures the audio
// the client got, true peaks under the ceiling; an organization without
// a default gets the provider's level.
func TestRealtimeOrgLoudness(t *testing.T) {
	t.Parallel()
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, harness.BaseYAML+`providers:
  espeak: {plugin: voxgate-espeak, managed: true}
`+harness.CloudProvider("elevenlabs", "voxgate-elevenlabs", el.BaseURL(), elevenlabs.Key)+`orgs:
  acme:
    loudness: {integrated: -26, true_peak: -2}
    providers:
      espeak: {enabled: true}
      elevenlabs: {enabled: true}
  globex:
    providers:
      espeak: {enabled: true}
      elevenlabs: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, elevenlabs.Key)
	text := "An agent's voice should be as loud as the rest of the product. " +
		"This reply is long enough to be several seconds of speech, measured over many gating blocks. " +
		"And a third sentence makes sure of it."
	speak := func(org string, start ...any) ([]byte, string) {
		t.Helper()
		rc := tg.DialRealtime(org)
		rc.Send(harness.StartMsg("l", start...))
		st := rc.Expect("started", "l")
		rc.Send(harness.TextMsg("l", text))
		rc.Send(harness.ControlMsg("close", "l"))
		var pcm []byte
		for _, m := range rc.Until(harness.IsType("done", "l")) {
			if m.Type == "audio" {
				pcm = append(pcm, m.Audio...)
			}
			if m.Type == "done" && m.Reason != "completed" {
				t.Fatalf("done %s", m.Raw)
			}
		}
		return pcm, st.MediaType
	}
	measure := func(pcm []byte, mediaType string) testenv.Loudness {
		t.Helper()
		rate, ok := strings.CutPrefix(mediaType, "audio/pcm;rate=")
		if !ok {
			t.Fatalf("media type %q", mediaType)
		}
		return testenv.FFmpegLoudness(t, pcm, "pcm", "-f", "s16le", "-ar", rate)
	}
	for _, tt := range []struct {
		name  string
		start []any
	}{
		{"eSpeak streamed", []any{"output", map[string]any{"format": "pcm"}}},
		{"eSpeak whole with timestamps", []any{"output", map[string]any{"format": "pcm"}, "timestamps", true}},
		{"ElevenLabs' input stream", []any{"model", "elevenlabs/eleven_flash_v2_5", "voice", elevenlabs.VoiceRachel, "output", pcm24k}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := measure(speak("acme", tt.start...))
			t.Logf("acme: FFmpeg measures I=%.2f LUFS, true peak %.2f dBTP", got.Integrated, got.TruePeak)
			if math.Abs(got.Integrated+26) > 1 || got.TruePeak > -2+0.1 {
				t.Errorf("acme's context: I=%.1f LUFS, true peak %.1f dBTP; want -26 ±1 LUFS, at most -1.9 dBTP", got.Integrated, got.TruePeak)
			}
			if got := measure(speak("globex", tt.start...)); math.Abs(got.Integrated+26) < 1 {
				t.Errorf("globex's context is at acme's default (%.1f LUFS)", got.Integrated)
			}
		})
	}
}
