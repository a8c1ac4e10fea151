package speech

import (
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

func intp(v int) *int { return &v }

// TestNegotiate checks the one decision of what a provider is asked for
// and whether the gateway converts: every encoding the model lists is
// asked for exactly and passes through; the rest is converted from the
// cheapest source, for a named reason.
func TestNegotiate(t *testing.T) {
	eleven := &sdk.Model{ID: "eleven", Encodings: []sdk.Encoding{
		{Format: "mp3", SampleRate: 44100, Bitrate: 128}, {Format: "mp3", SampleRate: 22050, Bitrate: 32}, {Format: "mp3", SampleRate: 44100, Bitrate: 64},
		{Format: "pcm", SampleRate: 24000}, {Format: "pcm", SampleRate: 16000}, {Format: "pcm", SampleRate: 44100},
		{Format: "opus", SampleRate: 48000, Bitrate: 64}, {Format: "ulaw", SampleRate: 8000},
	}, OutputFormats: []string{"mp3", "pcm", "opus", "ulaw"}, SampleRates: []int{24000, 16000, 44100}, NativeSampleRate: 24000}
	openai := &sdk.Model{ID: "tts-1", Encodings: []sdk.Encoding{
		{Format: "mp3", SampleRate: 24000}, {Format: "opus", SampleRate: 24000}, {Format: "aac", SampleRate: 24000},
		{Format: "flac", SampleRate: 24000}, {Format: "wav", SampleRate: 24000}, {Format: "pcm", SampleRate: 24000},
	}, OutputFormats: []string{"mp3", "opus", "aac", "flac", "wav", "pcm"}, SampleRates: []int{24000}, NativeSampleRate: 24000}
	espeak := &sdk.Model{ID: "espeak-ng", OutputFormats: []string{"wav", "pcm"}, SampleRates: []int{22050}, NativeSampleRate: 22050}
	pcmOnly := &sdk.Model{ID: "raw", OutputFormats: []string{"pcm"}, SampleRates: []int{16000, 24000}, NativeSampleRate: 24000}

	tests := []struct {
		name  string
		m     *sdk.Model
		want  *audio.OutputParams
		must  string
		ask   sdk.Encoding
		conv  string // "" passes through
		reasn string
	}{
		{"no format: the model's default", eleven, nil, "", sdk.Encoding{Format: "mp3", SampleRate: 44100, Bitrate: 128}, "", ""},
		{"mp3 alone: the model's first mp3", eleven, &audio.OutputParams{Format: "mp3"}, "", sdk.Encoding{Format: "mp3", SampleRate: 44100, Bitrate: 128}, "", ""},
		{"mp3 at 22.05 kHz", eleven, &audio.OutputParams{Format: "mp3", SampleRate: intp(22050)}, "", sdk.Encoding{Format: "mp3", SampleRate: 22050, Bitrate: 32}, "", ""},
		{"mp3 at 64 kbit/s", eleven, &audio.OutputParams{Format: "mp3", Bitrate: intp(64)}, "", sdk.Encoding{Format: "mp3", SampleRate: 44100, Bitrate: 64}, "", ""},
		{"pcm at 44.1 kHz", eleven, &audio.OutputParams{Format: "pcm", SampleRate: intp(44100)}, "", sdk.Encoding{Format: "pcm", SampleRate: 44100}, "", ""},
		{"mp3 at a bitrate the model lacks", eleven, &audio.OutputParams{Format: "mp3", Bitrate: intp(96)}, "", sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->mp3_24000_96", ReasonBitrate},
		{"pcm at a rate the model lacks", eleven, &audio.OutputParams{Format: "pcm", SampleRate: intp(22050)}, "", sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->pcm_22050", ReasonRate},
		{"wav the model lacks, from the PCM at the rate asked", eleven, &audio.OutputParams{Format: "wav", SampleRate: intp(16000)}, "", sdk.Encoding{Format: "pcm", SampleRate: 16000}, "pcm_16000->wav_16000", ReasonFormat},
		{"OpenAI's own mp3", openai, &audio.OutputParams{Format: "mp3"}, "", sdk.Encoding{Format: "mp3", SampleRate: 24000}, "", ""},
		{"OpenAI's aac", openai, &audio.OutputParams{Format: "aac"}, "", sdk.Encoding{Format: "aac", SampleRate: 24000}, "", ""},
		{"OpenAI's mp3 at a chosen bitrate", openai, &audio.OutputParams{Format: "mp3", Bitrate: intp(128)}, "", sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->mp3_24000_128", ReasonBitrate},
		{"volume: processed whatever is offered", openai, &audio.OutputParams{Format: "mp3"}, ReasonProcessing, sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->mp3_24000_96", ReasonProcessing},
		{"volume without a format: the model's default", openai, nil, ReasonProcessing, sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->mp3_24000_96", ReasonProcessing},
		{"eSpeak's default wav", espeak, nil, "", sdk.Encoding{Format: "wav", SampleRate: 22050}, "", ""},
		{"eSpeak's pcm", espeak, &audio.OutputParams{Format: "pcm"}, "", sdk.Encoding{Format: "pcm", SampleRate: 22050}, "", ""},
		{"mp3 from eSpeak", espeak, &audio.OutputParams{Format: "mp3"}, "", sdk.Encoding{Format: "pcm", SampleRate: 22050}, "pcm_22050->mp3_22050_96", ReasonFormat},
		{"PCM-only default gets a header", pcmOnly, nil, "", sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->wav_24000", ReasonHeader},
		{"pieces joined", pcmOnly, &audio.OutputParams{Format: "pcm", SampleRate: intp(16000)}, ReasonJoin, sdk.Encoding{Format: "pcm", SampleRate: 16000}, "pcm_16000->pcm_16000", ReasonJoin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := negotiate(tt.m, tt.want, tt.must)
			if r.ask != tt.ask {
				t.Errorf("asks for %v, want %v", r.ask, tt.ask)
			}
			switch {
			case tt.conv == "" && r.conv != nil:
				t.Errorf("converts %s (%s), want a pass-through", r.conv, r.conv.Reason)
			case tt.conv != "" && r.conv == nil:
				t.Errorf("passes through, want %s", tt.conv)
			case tt.conv != "" && (r.conv.String() != tt.conv || r.conv.Reason != tt.reasn):
				t.Errorf("converts %s (%s), want %s (%s)", r.conv, r.conv.Reason, tt.conv, tt.reasn)
			}
		})
	}
}
