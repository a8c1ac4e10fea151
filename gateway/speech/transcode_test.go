package speech

import (
	"errors"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/sdk"
)

// TestApplyStreamFormat checks what a stream format asks of the provider
// (j.Stream) and what the gateway then converts it to (j.Params.Output,
// convertedStream): an encoding the model streams (format, and the rate
// and bitrate when given) passes through, and the rest is made from the
// model's PCM at the rate closest above the one wanted.
func TestApplyStreamFormat(t *testing.T) {
	espeak := &sdk.Model{ID: "espeak-ng", OutputFormats: []string{sdk.FormatWAV, sdk.FormatPCM}, SampleRates: []int{22050}, NativeSampleRate: 22050}
	cloud := &sdk.Model{ID: "tts", OutputFormats: []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3}, SampleRates: []int{8000, 16000, 24000, 44100}, NativeSampleRate: 24000}
	mp3Only := &sdk.Model{ID: "clips", OutputFormats: []string{sdk.FormatWAV, sdk.FormatMP3}, NativeSampleRate: 44100}
	// Opus in clips only (Inworld): an Opus stream is converted.
	clipOpus := &sdk.Model{ID: "inworld", OutputFormats: []string{sdk.FormatPCM, sdk.FormatOpus}, SampleRates: []int{24000}, NativeSampleRate: 24000,
		Encodings:       []sdk.Encoding{{Format: "pcm", SampleRate: 24000}, {Format: "opus", SampleRate: 48000}},
		StreamEncodings: []sdk.Encoding{{Format: "pcm", SampleRate: 24000}}}
	tests := []struct {
		name   string
		model  *sdk.Model
		f      StreamFormat
		stream StreamFormat  // asked of the provider
		out    *audio.Output // made by the gateway; nil: passed through
		bad    string        // the field of a 400
	}{
		{"native mp3", cloud, StreamFormat{Format: "mp3"}, StreamFormat{Format: "mp3", SampleRate: 24000}, nil, ""},
		{"native mp3 at its rate", cloud, StreamFormat{Format: "mp3", SampleRate: 24000}, StreamFormat{Format: "mp3", SampleRate: 24000}, nil, ""},
		{"mp3 at a rate the model lacks", cloud, StreamFormat{Format: "mp3", SampleRate: 44100, Bitrate: 128}, StreamFormat{Format: "pcm", SampleRate: 44100}, &audio.Output{Format: "mp3", SampleRate: 44100, Bitrate: 128}, ""},
		{"native pcm rate", cloud, StreamFormat{Format: "pcm", SampleRate: 16000}, StreamFormat{Format: "pcm", SampleRate: 16000}, nil, ""},
		{"native wav", espeak, StreamFormat{Format: "wav"}, StreamFormat{Format: "wav", SampleRate: 22050}, nil, ""},
		{"wav at another rate", espeak, StreamFormat{Format: "wav", SampleRate: 44100}, StreamFormat{Format: "pcm", SampleRate: 22050}, &audio.Output{Format: "wav", SampleRate: 44100}, ""},
		{"mp3 from eSpeak's PCM", espeak, StreamFormat{Format: "mp3", SampleRate: 44100, Bitrate: 128}, StreamFormat{Format: "pcm", SampleRate: 22050}, &audio.Output{Format: "mp3", SampleRate: 44100, Bitrate: 128}, ""},
		{"OpenAI's mp3 at the source's rate", espeak, StreamFormat{Format: "mp3"}, StreamFormat{Format: "pcm"}, &audio.Output{Format: "mp3"}, ""},
		{"ulaw from the model's 8 kHz", cloud, StreamFormat{Format: "ulaw", SampleRate: 8000}, StreamFormat{Format: "pcm", SampleRate: 8000}, &audio.Output{Format: "ulaw", SampleRate: 8000}, ""},
		{"pcm from the rate above", cloud, StreamFormat{Format: "pcm", SampleRate: 22050}, StreamFormat{Format: "pcm", SampleRate: 24000}, &audio.Output{Format: "pcm", SampleRate: 22050}, ""},
		{"pcm from the highest rate", cloud, StreamFormat{Format: "pcm", SampleRate: 48000}, StreamFormat{Format: "pcm", SampleRate: 44100}, &audio.Output{Format: "pcm", SampleRate: 48000}, ""},
		{"opus", cloud, StreamFormat{Format: "opus", SampleRate: 48000, Bitrate: 64}, StreamFormat{Format: "pcm", SampleRate: 44100}, &audio.Output{Format: "opus", SampleRate: 48000, Bitrate: 64}, ""},
		{"opus the model streams not", clipOpus, StreamFormat{Format: "opus"}, StreamFormat{Format: "pcm", SampleRate: 24000}, &audio.Output{Format: "opus"}, ""},
		{"flac cannot stream", cloud, StreamFormat{Format: "flac", SampleRate: 44100}, StreamFormat{}, nil, "format"},
		{"no PCM stream to convert", mp3Only, StreamFormat{Format: "ulaw", SampleRate: 8000}, StreamFormat{}, nil, "format"},
		{"G.711 is 8 kHz", espeak, StreamFormat{Format: "ulaw", SampleRate: 16000}, StreamFormat{}, nil, "sampleRate"},
		{"pcm below 8 kHz", espeak, StreamFormat{Format: "pcm", SampleRate: 4000}, StreamFormat{}, nil, "sampleRate"},
		{"an MP3 bitrate the rate lacks", espeak, StreamFormat{Format: "mp3", SampleRate: 44100, Bitrate: 8}, StreamFormat{}, nil, "bitrate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &Job{Delivery: DeliverStream, Provider: &catalog.Provider{ID: "p"}, Model: tt.model, req: &Request{StreamFormat: &tt.f}}
			err := j.applyStreamFormat(&tt.f)
			if tt.bad != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || len(pe.Validation) == 0 || pe.Validation[0].Path[len(pe.Validation[0].Path)-1] != tt.bad {
					t.Fatalf("err %v, want a 400 on output.%s", err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if j.Stream != tt.stream {
				t.Errorf("provider asked for %+v, want %+v", j.Stream, tt.stream)
			}
			got := convertedStream(j, false)
			if (got == nil) != (tt.out == nil) || (got != nil && *got != *tt.out) {
				t.Errorf("converted to %+v, want %+v", got, tt.out)
			}
		})
	}

	// A long text streams its pieces as the model's PCM: a format the
	// model streams itself is then converted, with the rate and bitrate
	// asked for where they are valid.
	f := &StreamFormat{Format: "mp3", SampleRate: 24000}
	j := &Job{Delivery: DeliverStream, Provider: &catalog.Provider{ID: "p"}, Model: cloud, req: &Request{StreamFormat: f}}
	if err := j.applyStreamFormat(f); err != nil {
		t.Fatal(err)
	}
	if got := convertedStream(j, true); got == nil || *got != (audio.Output{Format: "mp3", SampleRate: 24000}) {
		t.Errorf("long text in native mp3: converted to %+v", got)
	}
	f.Bitrate = 999
	if got := convertedStream(j, true); got == nil || *got != (audio.Output{Format: "mp3"}) {
		t.Errorf("long text in native mp3 at a bad bitrate: converted to %+v", got)
	}
	j = &Job{Delivery: DeliverStream, Provider: &catalog.Provider{ID: "p"}, Model: cloud, Stream: StreamFormat{Format: "pcm", SampleRate: 16000}}
	if got := convertedStream(j, true); got != nil {
		t.Errorf("long text in native pcm: converted to %+v", got)
	}
}
