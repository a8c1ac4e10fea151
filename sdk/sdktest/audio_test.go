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
		{"unknown type", "audio/webm", second, Clip{}, "not one the kit can decode"},
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
		"audio/pcm;rate=24000": sdk.FormatPCM, "audio/ogg": "", "audio/ogg; codecs=opus": sdk.FormatOpus, "audio/PCMU;rate=8000": sdk.FormatULaw, "": "",
	}
	for mt, want := range tests {
		if got := FormatOf(mt); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", mt, got, want)
		}
	}
}

// TestDecodeContainers reads the compressed formats a provider may send
// natively. The fixtures are 0.5 s of a 440 Hz tone made by ffmpeg:
//
//	ffmpeg -f lavfi -i sine=frequency=440:sample_rate=24000:duration=0.5 -ac 1 -c:a libopus -b:a 24k tone.opus
//	ffmpeg -f lavfi -i sine=frequency=440:sample_rate=22050:duration=0.5 -ac 1 -c:a flac tone.flac
//	ffmpeg -f lavfi -i sine=frequency=440:sample_rate=24000:duration=0.5 -ac 1 -c:a aac -b:a 32k -f adts tone.aac
func TestDecodeContainers(t *testing.T) {
	tests := []struct {
		file, mediaType, format string
		rate                    int
		// min and max bound the duration: AAC's last frame and Opus's
		// padding round it up.
		min, max time.Duration
	}{
		{"tone.opus", "audio/ogg;codecs=opus", sdk.FormatOpus, 48000, 495 * time.Millisecond, 525 * time.Millisecond},
		{"tone.flac", "audio/flac", sdk.FormatFLAC, 22050, 499 * time.Millisecond, 501 * time.Millisecond},
		{"tone.aac", "audio/aac", sdk.FormatAAC, 24000, 490 * time.Millisecond, 600 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			clip, err := Decode(tt.mediaType, data)
			if err != nil {
				t.Fatal(err)
			}
			if clip.Format != tt.format || clip.SampleRate != tt.rate || clip.Duration < tt.min || clip.Duration > tt.max {
				t.Errorf("got %+v", clip)
			}
			// Cut short, or in another container, it must not pass.
			if _, err := Decode(tt.mediaType, data[:len(data)-5]); err == nil && tt.format != sdk.FormatFLAC {
				t.Errorf("a truncated %s decoded", tt.format)
			}
			if _, err := Decode(tt.mediaType, append([]byte("RIFF"), data...)); err == nil {
				t.Errorf("a %s with a foreign header decoded", tt.format)
			}
		})
	}
	clip, err := Decode("audio/PCMU;rate=8000", make([]byte, 4000))
	if err != nil || clip.Format != sdk.FormatULaw || clip.Duration != 500*time.Millisecond {
		t.Errorf("ulaw: %+v %v", clip, err)
	}
	if clip, err := Decode("audio/basic", make([]byte, 800)); err != nil || clip.SampleRate != 8000 {
		t.Errorf("audio/basic: %+v %v", clip, err)
	}
}
