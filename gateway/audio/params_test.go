package audio

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		body string   // the request's whole-clip fields as JSON
		want []string // dotted paths of the expected FieldErrors
	}{
		{"valid mp3", `{"volumeDbfs": -20, "output": {"format": "mp3", "sampleRate": 24000, "bitrate": 64}}`, nil},
		{"valid wav", `{"output": {"format": "wav", "sampleRate": 16000}}`, nil},
		{"valid pcm no rate", `{"volumeDbfs": 0, "output": {"format": "pcm"}}`, nil},
		{"valid mp3 bitrate without rate", `{"output": {"format": "mp3", "bitrate": 320}}`, nil},
		{"nothing", `{}`, nil},
		{"volume 5", `{"volumeDbfs": 5}`, []string{"volumeDbfs"}},
		{"volume -61", `{"volumeDbfs": -61}`, []string{"volumeDbfs"}},
		{"format ogg", `{"output": {"format": "ogg"}}`, []string{"output.format"}},
		{"format missing", `{"output": {"sampleRate": 16000}}`, []string{"output.format"}},
		{"sampleRate -1", `{"output": {"format": "wav", "sampleRate": -1}}`, []string{"output.sampleRate"}},
		{"sampleRate 0", `{"output": {"format": "pcm", "sampleRate": 0}}`, []string{"output.sampleRate"}},
		{"wav sampleRate 4000", `{"output": {"format": "wav", "sampleRate": 4000}}`, []string{"output.sampleRate"}},
		{"pcm sampleRate 384000", `{"output": {"format": "pcm", "sampleRate": 384000}}`, []string{"output.sampleRate"}},
		{"mp3 sampleRate 96000", `{"output": {"format": "mp3", "sampleRate": 96000}}`, []string{"output.sampleRate"}},
		{"bitrate on wav", `{"output": {"format": "wav", "bitrate": 128}}`, []string{"output.bitrate"}},
		{"bitrate on pcm", `{"output": {"format": "pcm", "bitrate": 96}}`, []string{"output.bitrate"}},
		{"mp3 bitrate 100", `{"output": {"format": "mp3", "bitrate": 100}}`, []string{"output.bitrate"}},
		{"mp3 bitrate 8 at 44.1k", `{"output": {"format": "mp3", "sampleRate": 44100, "bitrate": 8}}`, []string{"output.bitrate"}},
		{"mp3 bitrate 96 at 8k", `{"output": {"format": "mp3", "sampleRate": 8000, "bitrate": 96}}`, []string{"output.bitrate"}},
		{"mp3 bitrate 320 at 24k", `{"output": {"format": "mp3", "sampleRate": 24000, "bitrate": 320}}`, []string{"output.bitrate"}},
		{"valid opus", `{"output": {"format": "opus", "sampleRate": 48000, "bitrate": 24}}`, nil},
		{"valid flac 44.1k", `{"output": {"format": "flac", "sampleRate": 44100}}`, nil},
		{"valid ulaw", `{"output": {"format": "ulaw", "sampleRate": 8000}}`, nil},
		{"valid alaw no rate", `{"volumeDbfs": -20, "output": {"format": "alaw"}}`, nil},
		{"opus sampleRate 16000", `{"output": {"format": "opus", "sampleRate": 16000}}`, []string{"output.sampleRate"}},
		{"opus bitrate 4", `{"output": {"format": "opus", "bitrate": 4}}`, []string{"output.bitrate"}},
		{"ulaw sampleRate 16000", `{"output": {"format": "ulaw", "sampleRate": 16000}}`, []string{"output.sampleRate"}},
		{"bitrate on alaw", `{"output": {"format": "alaw", "bitrate": 64}}`, []string{"output.bitrate"}},
		{"bitrate on flac", `{"output": {"format": "flac", "bitrate": 64}}`, []string{"output.bitrate"}},
		{"flac sampleRate 4000", `{"output": {"format": "flac", "sampleRate": 4000}}`, []string{"output.sampleRate"}},
		{"several", `{"volumeDbfs": 3, "output": {"format": "wav", "sampleRate": -1, "bitrate": 96}}`,
			[]string{"volumeDbfs", "output.sampleRate", "output.bitrate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Params
			if err := json.Unmarshal([]byte(tt.body), &p); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, fe := range p.Validate() {
				got = append(got, strings.Join(fe.Path, "."))
				if fe.Message == "" {
					t.Errorf("%v has no message", fe.Path)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("paths %q, want %q (%v)", got, tt.want, p.Validate())
			}
		})
	}
}

func TestValidationErrorMessages(t *testing.T) {
	p := Params{Output: &OutputParams{Format: FormatWAV, Bitrate: ptr(96)}}
	fe := p.Validate()
	want := FieldError{Path: []string{"output", "bitrate"}, Message: "bitrate is only allowed with format mp3 or opus"}
	if len(fe) != 1 || !slices.Equal(fe[0].Path, want.Path) || fe[0].Message != want.Message {
		t.Fatalf("got %+v, want %+v", fe, want)
	}
	_, _, err := Process([]byte{0, 0}, "audio/pcm;rate=8000", p, Limits{})
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidParams) || len(ve.Fields) != 1 {
		t.Errorf("Process error %v, want a *ValidationError matching ErrInvalidParams", err)
	}
	if got := err.Error(); !strings.Contains(got, "output.bitrate: bitrate is only allowed") {
		t.Errorf("message %q", got)
	}
}

func TestNeedsProcessing(t *testing.T) {
	for _, tt := range []struct {
		p    Params
		want bool
	}{
		{Params{}, false},
		{Params{VolumeDbfs: ptr(-20.0)}, true},
		{Params{Output: &OutputParams{Format: FormatWAV}}, true},
	} {
		if got := NeedsProcessing(tt.p); got != tt.want {
			t.Errorf("NeedsProcessing(%+v) = %v", tt.p, got)
		}
	}
}
