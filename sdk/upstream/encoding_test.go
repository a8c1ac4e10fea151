package upstream

import (
	"errors"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

func TestChooseEncoding(t *testing.T) {
	m := &sdk.Model{ID: "m1", Encodings: []sdk.Encoding{
		{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 128},
		{Format: sdk.FormatMP3, SampleRate: 22050, Bitrate: 32},
		{Format: sdk.FormatPCM, SampleRate: 24000},
		{Format: sdk.FormatPCM, SampleRate: 16000},
		{Format: sdk.FormatOpus, SampleRate: 48000},
	}}
	tests := []struct {
		format        string
		rate, bitrate int
		want          sdk.Encoding
		errHas        string
	}{
		{format: "", want: sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 128}},
		{format: sdk.FormatMP3, rate: 22050, want: sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 22050, Bitrate: 32}},
		{format: sdk.FormatMP3, bitrate: 32, want: sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 22050, Bitrate: 32}},
		{format: sdk.FormatPCM, want: sdk.Encoding{Format: sdk.FormatPCM, SampleRate: 24000}},
		{format: sdk.FormatPCM, rate: 16000, want: sdk.Encoding{Format: sdk.FormatPCM, SampleRate: 16000}},
		{format: sdk.FormatOpus, want: sdk.Encoding{Format: sdk.FormatOpus, SampleRate: 48000}},
		{format: sdk.FormatPCM, rate: 8000, errHas: "does not produce pcm at 8000 Hz; in pcm it offers pcm_24000, pcm_16000"},
		{format: sdk.FormatMP3, rate: 44100, bitrate: 32, errHas: "mp3 at 44100 Hz and 32 kbit/s"},
		{format: sdk.FormatWAV, errHas: `does not produce "wav"; it offers mp3, pcm, opus`},
	}
	for _, tt := range tests {
		got, err := ChooseEncoding("p", m, &sdk.SynthesizeRequest{Format: tt.format, SampleRate: tt.rate, Bitrate: tt.bitrate})
		if tt.errHas != "" {
			var e *sdk.Error
			if !errors.As(err, &e) || e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, tt.errHas) {
				t.Errorf("%s/%d/%d: got %v, want an invalid request saying %q", tt.format, tt.rate, tt.bitrate, err, tt.errHas)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s/%d/%d: got %v, %v; want %v", tt.format, tt.rate, tt.bitrate, got, err, tt.want)
		}
	}
}
