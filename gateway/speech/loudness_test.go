package speech

import (
	"errors"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/sdk"
)

// TestLevelledStreamFormat checks what a leveled stream asks of the
// provider (raw PCM) and what the gateway encodes it to afterwards: what
// the stream would have been without loudness (the dialect's format, else
// the model's first stream encoding), PCM left as it is; a model without
// a PCM stream, or a format the gateway does not stream, is a 400 for a
// request's own loudness, and an unleveled stream with a warning for the
// organization's default.
func TestLevelledStreamFormat(t *testing.T) {
	espeak := &sdk.Model{ID: "espeak-ng", OutputFormats: []string{sdk.FormatWAV, sdk.FormatPCM}, SampleRates: []int{22050}, NativeSampleRate: 22050}
	pcmFirst := &sdk.Model{ID: "tts", OutputFormats: []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3}, SampleRates: []int{16000, 24000}, NativeSampleRate: 24000}
	mp3First := &sdk.Model{ID: "cloud", OutputFormats: []string{sdk.FormatMP3, sdk.FormatPCM}, SampleRates: []int{24000}, NativeSampleRate: 24000}
	aacFirst := &sdk.Model{ID: "aac", OutputFormats: []string{sdk.FormatAAC, sdk.FormatPCM}, SampleRates: []int{24000}, NativeSampleRate: 24000}
	noPCM := &sdk.Model{ID: "mp3", OutputFormats: []string{sdk.FormatMP3}, NativeSampleRate: 44100}
	tests := []struct {
		name    string
		model   *sdk.Model
		f       *StreamFormat // the dialect's; nil: voxgate's own body
		byOrg   bool          // the organization's default, not the request's
		stream  StreamFormat  // asked of the provider
		out     *audio.Output // encoded by the gateway; nil: PCM as it comes
		bad     bool          // a 400
		dropped bool          // unleveled, with a warning
	}{
		{"eSpeak's WAV", espeak, nil, false, StreamFormat{Format: "pcm", SampleRate: 22050}, &audio.Output{Format: "wav", SampleRate: 22050}, false, false},
		{"PCM first", pcmFirst, nil, false, StreamFormat{Format: "pcm", SampleRate: 24000}, nil, false, false},
		{"MP3 first", mp3First, nil, false, StreamFormat{Format: "pcm", SampleRate: 24000}, &audio.Output{Format: "mp3", SampleRate: 24000}, false, false},
		{"AAC first: PCM", aacFirst, nil, false, StreamFormat{Format: "pcm", SampleRate: 24000}, nil, false, false},
		{"dialect's PCM rate", pcmFirst, &StreamFormat{Format: "pcm", SampleRate: 16000}, false, StreamFormat{Format: "pcm", SampleRate: 16000}, nil, false, false},
		{"dialect's MP3 the model streams", pcmFirst, &StreamFormat{Format: "mp3"}, false, StreamFormat{Format: "pcm", SampleRate: 24000}, &audio.Output{Format: "mp3", SampleRate: 24000}, false, false},
		{"dialect's Opus", espeak, &StreamFormat{Format: "opus"}, true, StreamFormat{Format: "pcm", SampleRate: 22050}, &audio.Output{Format: "opus"}, false, false},
		{"dialect's AAC", aacFirst, &StreamFormat{Format: "aac"}, false, StreamFormat{}, nil, true, false},
		{"no PCM stream", noPCM, nil, false, StreamFormat{}, nil, true, false},
		{"no PCM stream, default", noPCM, nil, true, StreamFormat{}, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{StreamFormat: tt.f, loudnessByDefault: tt.byOrg}
			target := -16.0
			j := &Job{Delivery: DeliverStream, Provider: &catalog.Provider{ID: "p"}, Model: tt.model, req: r}
			j.Params.Loudness = &audio.LoudnessParams{Integrated: &target}
			if err := j.applyStreamFormat(tt.f); err != nil {
				t.Fatalf("applyStreamFormat: %v", err)
			}
			err := (&Service{voices: newVoiceLoudness(4)}).prepareLoudness(j, r)
			switch {
			case tt.bad:
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Code != problem.ParamNotAllowedOnStream {
					t.Fatalf("err %v, want 400 param_not_allowed_on_stream", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tt.dropped:
				if j.Params.Loudness != nil || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "loudness target") {
					t.Fatalf("the default was kept (%v) or not warned of: %q", j.Params.Loudness, j.Warnings)
				}
				return
			}
			if j.Stream != tt.stream {
				t.Errorf("provider asked for %+v, want %+v", j.Stream, tt.stream)
			}
			got := convertedStream(j, false)
			if (got == nil) != (tt.out == nil) || (got != nil && *got != *tt.out) {
				t.Errorf("encoded as %+v, want %+v", got, tt.out)
			}
		})
	}
}
