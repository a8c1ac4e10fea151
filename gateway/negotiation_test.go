package gateway_test

import (
	"testing"

	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestFormatNegotiation: the gateway asks the provider for exactly the
// encoding the client asked for when the model produces it, and passes
// the bytes through untouched; it converts only what the model cannot
// produce or what it must process, and then says so in
// X-Voxgate-Transcoded and counts it in voxgate_audio_conversions_total.
func TestFormatNegotiation(t *testing.T) {
	c := startCloud(t)
	conversions := func() float64 {
		var n float64
		for _, s := range c.scrape() {
			if s.name == "voxgate_audio_conversions_total" {
				n += s.value
			}
		}
		return n
	}
	upstreamFormat := func(t *testing.T) string {
		t.Helper()
		last, ok := c.oai.LastRequest()
		if !ok {
			t.Fatal("the fake saw no request")
		}
		var body struct {
			ResponseFormat string `json:"response_format"`
		}
		if err := last.JSON(&body); err != nil {
			t.Fatal(err)
		}
		return body.ResponseFormat
	}
	text := "The relay passes the provider's audio through."
	tests := []struct {
		name string
		body map[string]any
		// upstream is the response_format OpenAI was asked for.
		upstream string
		// mediaType is the answer's; transcoded its X-Voxgate-Transcoded
		// ("" for a pass-through) and reason the conversion's reason.
		mediaType, transcoded, reason string
	}{
		{"OpenAI SDK's default body: mp3", map[string]any{"model": "openai/tts-1", "input": text, "voice": "alloy"},
			"mp3", "audio/mpeg", "", ""},
		{"native mp3", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "output": map[string]any{"format": "mp3"}},
			"mp3", "audio/mpeg", "", ""},
		{"native wav", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "output": "wav"},
			"wav", "audio/wav", "", ""},
		{"native pcm at its rate", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "output": map[string]any{"format": "pcm", "sampleRate": 24000}},
			"pcm", "audio/pcm;rate=24000", "", ""},
		{"an mp3 bitrate OpenAI does not let callers choose", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "output": map[string]any{"format": "mp3", "bitrate": 128}},
			"pcm", "audio/mpeg", "pcm_24000->mp3_24000_128", "bitrate"},
		{"a rate OpenAI does not make", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "output": map[string]any{"format": "wav", "sampleRate": 16000}},
			"pcm", "audio/wav", "pcm_24000->wav_16000", "sample_rate"},
		{"volumeDbfs needs the samples", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "volumeDbfs": -20, "output": "mp3"},
			"pcm", "audio/mpeg", "pcm_24000->mp3_24000_96", "processing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := conversions()
			r := c.do("POST", "/v1/audio/speech", "acme", tt.body, "Cache-Control", "no-cache")
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := upstreamFormat(t); got != tt.upstream {
				t.Errorf("OpenAI was asked for %q, want %q", got, tt.upstream)
			}
			if got := r.header.Get("Content-Type"); got != tt.mediaType {
				t.Errorf("Content-Type %q, want %q", got, tt.mediaType)
			}
			if got := r.header.Get("X-Voxgate-Transcoded"); got != tt.transcoded {
				t.Errorf("X-Voxgate-Transcoded %q, want %q", got, tt.transcoded)
			}
			if row := c.lastLog("acme"); row.Transcoded != tt.transcoded {
				t.Errorf("the log row says transcoded %q, want %q", row.Transcoded, tt.transcoded)
			}
			if _, err := sdktest.Decode(r.header.Get("Content-Type"), r.body); err != nil {
				t.Errorf("the answer does not decode: %v", err)
			}
			after := conversions()
			switch {
			case tt.transcoded == "" && after != before:
				t.Errorf("a pass-through counted a conversion (%v -> %v)", before, after)
			case tt.transcoded != "":
				if after != before+1 {
					t.Errorf("conversions %v -> %v, want one more", before, after)
				}
				to := map[string]string{"audio/mpeg": "mp3", "audio/wav": "wav"}[tt.mediaType]
				if v := must(t, c.scrape(), "voxgate_audio_conversions_total", "from", "pcm", "to", to, "reason", tt.reason); v < 1 {
					t.Errorf("no conversion counted from pcm to %s for reason %s", to, tt.reason)
				}
			}
		})
	}
}
