package sdktest

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// wav builds a WAV file: a RIFF header whose data chunk claims dataSize
// bytes, followed by pcm.
func wav(rate, channels, bits int, dataSize uint32, pcm []byte) []byte {
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, uint32(36+len(pcm)))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*channels*bits/8))
	b = binary.LittleEndian.AppendUint16(b, uint16(channels*bits/8))
	b = binary.LittleEndian.AppendUint16(b, uint16(bits))
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, dataSize)
	return append(b, pcm...)
}

func TestDecode(t *testing.T) {
	mp3, err := os.ReadFile("testdata/tone.mp3") // 1.07 s, 22050 Hz, made with ffmpeg/LAME
	if err != nil {
		t.Fatal(err)
	}
	second := make([]byte, 32000) // 1 s of 16 kHz 16-bit mono
	withList := wav(16000, 1, 16, 32000, nil)
	// A LIST chunk between fmt and data, odd-sized to exercise padding.
	withList = append(withList[:36], append([]byte("LIST\x03\x00\x00\x00abc\x00"), withList[36:]...)...)
	withList = append(withList, second...)

	tests := []struct {
		name      string
		mediaType string
		data      []byte
		want      Clip   // checked when wantErr is empty
		wantErr   string // substring of the error
	}{
		{"pcm", "audio/pcm;rate=16000", second, Clip{Format: sdk.FormatPCM, SampleRate: 16000, Channels: 1, Frames: 16000, Duration: time.Second}, ""},
		{"pcm stereo", "audio/pcm; rate=8000; channels=2", second, Clip{Format: sdk.FormatPCM, SampleRate: 8000, Channels: 2, Frames: 8000, Duration: time.Second}, ""},
		{"pcm odd bytes", "audio/pcm;rate=16000", second[:3], Clip{}, "whole number"},
		{"pcm without rate", "audio/pcm", second, Clip{}, "rate"},
		{"pcm zero rate", "audio/pcm;rate=0", second, Clip{}, "rate"},
		{"wav", "audio/wav", wav(16000, 1, 16, 32000, second), Clip{Format: sdk.FormatWAV, SampleRate: 16000, Channels: 1, Frames: 16000, Duration: time.Second}, ""},
		{"wav with extra chunk", "audio/wav", withList, Clip{Format: sdk.FormatWAV, SampleRate: 16000, Channels: 1, Frames: 16000, Duration: time.Second}, ""},
		{"streamed wav", "audio/x-wav", wav(16000, 1, 16, 0xFFFFFFFF, second), Clip{Format: sdk.FormatWAV, SampleRate: 16000, Channels: 1, Frames: 16000, Duration: time.Second}, ""},
		{"wav truncated", "audio/wav", wav(16000, 1, 16, 32000, second[:1000]), Clip{}, "claims 32000"},
		{"wav half sample", "audio/wav", wav(16000, 1, 16, 0, second[:1001]), Clip{}, "whole number"},
		{"wav without header", "audio/wav", second, Clip{}, "RIFF"},
		{"wav bad block align", "audio/wav", func() []byte { b := wav(16000, 1, 16, 32000, second); b[32] = 4; return b }(), Clip{}, "block align"},
		{"mp3", "audio/mpeg", mp3, Clip{Format: sdk.FormatMP3, SampleRate: 22050, Channels: 2}, ""},
		{"mp3 garbage", "audio/mpeg", second, Clip{}, "mp3"},
		{"unknown type", "audio/ogg", second, Clip{}, "not one the kit can decode"},
		{"bad media type", "audio/pcm;rate", second, Clip{}, "media type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.mediaType, tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v, %v; want an error about %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Format == sdk.FormatMP3 {
				// MP3 adds encoder delay and padding; ffprobe says 1.07 s.
				if got.Format != tt.want.Format || got.SampleRate != tt.want.SampleRate || got.Seconds() < 1 || got.Seconds() > 1.15 {
					t.Errorf("got %+v, want a 22050 Hz MP3 of about 1.07 s", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	tests := map[string]string{
		"audio/wav": sdk.FormatWAV, "audio/wave": sdk.FormatWAV, "audio/mpeg": sdk.FormatMP3,
		"audio/pcm;rate=24000": sdk.FormatPCM, "audio/ogg": "", "": "",
	}
	for mt, want := range tests {
		if got := FormatOf(mt); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", mt, got, want)
		}
	}
}
