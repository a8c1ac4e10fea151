package speech_test

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

func intp(v int) *int           { return &v }
func floatp(v float64) *float64 { return &v }

// TestFormatNegotiation: the provider is asked for exactly what the client
// asked when the model produces it, and its bytes pass through untouched;
// otherwise the gateway asks for what it decodes cheapest and converts,
// for a reason the answer, the row and the conversions counter report.
// The test kit's models produce PCM and WAV at 8, 16 (native), 24 and
// 48 kHz.
func TestFormatNegotiation(t *testing.T) {
	tests := []struct {
		name    string
		formats string // the kit's output_formats ("" = pcm,wav)
		output  *audio.OutputParams
		volume  *float64
		speed   *float64
		// ask is what the provider is asked for; conv the conversion
		// ("" passes through) and reason its reason.
		ask          sdk.Encoding
		conv, reason string
		mediaType    string
		rate         int // of the answer
	}{
		{"the model's default", "", nil, nil, nil,
			sdk.Encoding{Format: "wav", SampleRate: 16000}, "", "", "audio/wav", 16000},
		{"wav at a rate the model has", "", &audio.OutputParams{Format: "wav", SampleRate: intp(24000)}, nil, nil,
			sdk.Encoding{Format: "wav", SampleRate: 24000}, "", "", "audio/wav", 24000},
		{"pcm", "", &audio.OutputParams{Format: "pcm"}, nil, nil,
			sdk.Encoding{Format: "pcm", SampleRate: 16000}, "", "", "audio/pcm;rate=16000", 16000},
		{"a native speed", "", nil, nil, floatp(1.5),
			sdk.Encoding{Format: "wav", SampleRate: 16000}, "", "", "audio/wav", 16000},
		{"a format the model lacks", "", &audio.OutputParams{Format: "mp3"}, nil, nil,
			sdk.Encoding{Format: "pcm", SampleRate: 16000}, "pcm_16000->mp3_16000_96", speech.ReasonFormat, "audio/mpeg", 16000},
		{"a rate the model lacks", "", &audio.OutputParams{Format: "wav", SampleRate: intp(22050)}, nil, nil,
			sdk.Encoding{Format: "pcm", SampleRate: 24000}, "pcm_24000->wav_22050", speech.ReasonRate, "audio/wav", 22050},
		{"volume", "", nil, floatp(-20), nil,
			sdk.Encoding{Format: "pcm", SampleRate: 16000}, "pcm_16000->wav_16000", speech.ReasonProcessing, "audio/wav", 16000},
		{"a speed past the model's", "", nil, nil, floatp(3),
			sdk.Encoding{Format: "pcm", SampleRate: 16000}, "pcm_16000->wav_16000", speech.ReasonProcessing, "audio/wav", 16000},
		{"raw PCM answered in a header", "pcm", nil, nil, nil,
			sdk.Encoding{Format: "pcm", SampleRate: 16000}, "pcm_16000->wav_16000", speech.ReasonHeader, "audio/wav", 16000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{outputFormats: tt.formats})
			r := req("testkit/test", "alpha", "Negotiate the format")
			r.Output, r.VolumeDbfs, r.Speed = tt.output, tt.volume, tt.speed
			out, err := p.speak(t.Context(), "acme", r, speech.DeliverClip)
			wantCode(t, err, "")
			calls := p.calls("testkit")
			if len(calls) != 1 {
				t.Fatalf("%d provider calls, want 1", len(calls))
			}
			if got := (sdk.Encoding{Format: calls[0].Format, SampleRate: calls[0].SampleRate, Bitrate: calls[0].Bitrate}); got != tt.ask {
				t.Errorf("the provider was asked for %+v, want %+v", got, tt.ask)
			}
			res := out.Result
			if res.MediaType != tt.mediaType {
				t.Errorf("media type %q, want %q", res.MediaType, tt.mediaType)
			}
			if c := decode(t, res); c.Rate != tt.rate {
				t.Errorf("answered at %d Hz, want %d", c.Rate, tt.rate)
			}
			count := func(c *speech.Conversion) float64 {
				return testutil.ToFloat64(p.metrics.AudioConversions.WithLabelValues(c.From.Format, c.To.Format, c.Reason))
			}
			if tt.conv == "" {
				if res.Conversion != nil || out.Row.Transcoded != "" {
					t.Errorf("converted %v (row %q); want the provider's bytes untouched", res.Conversion, out.Row.Transcoded)
				}
				// Untouched: the bytes are the provider's own.
				direct := calls[0]
				kit, err := p.providers["testkit"].Provider.Synthesize(t.Context(), &direct)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(res.Audio, kit.Audio) {
					t.Errorf("the answer's %d bytes are not the provider's %d", len(res.Audio), len(kit.Audio))
				}
				return
			}
			c := res.Conversion
			if c == nil || c.String() != tt.conv || c.Reason != tt.reason || out.Row.Transcoded != tt.conv {
				t.Fatalf("conversion %+v (row %q), want %s for the reason %s", c, out.Row.Transcoded, tt.conv, tt.reason)
			}
			if n := count(c); n != 1 {
				t.Errorf("the conversions counter says %v, want 1", n)
			}
		})
	}
}

// TestFormatNegotiationFromTheCache: a hit says what the miss converted,
// but counts no conversion: the gateway converted nothing for it.
func TestFormatNegotiationFromTheCache(t *testing.T) {
	p := newPipeline(t, setup{cache: true})
	speak := func() *speech.Spoken {
		r := req("testkit/test", "alpha", "Once converted")
		r.Output = &audio.OutputParams{Format: "mp3"}
		out, err := p.speak(t.Context(), "acme", r, speech.DeliverClip)
		wantCode(t, err, "")
		return out
	}
	speak()
	p.cache.waitStored(t)
	hit := speak()
	if hit.Cache != "hit" || hit.Row.Transcoded != "pcm_16000->mp3_16000_96" {
		t.Errorf("cache %q, transcoded %q; want a hit saying what the miss converted", hit.Cache, hit.Row.Transcoded)
	}
	if n := testutil.ToFloat64(p.metrics.AudioConversions.WithLabelValues("pcm", "mp3", speech.ReasonFormat)); n != 1 {
		t.Errorf("the conversions counter says %v, want the miss's 1", n)
	}
}

// TestUnavailableOutput: a format the gateway cannot encode is refused
// before the provider is called, when the model does not produce it
// itself.
func TestUnavailableOutput(t *testing.T) {
	p := newPipeline(t, setup{})
	r := req("testkit/test", "alpha", "In AAC please")
	r.Output = &audio.OutputParams{Format: "aac"}
	_, err := p.speak(t.Context(), "acme", r, speech.DeliverClip)
	wantCode(t, err, problem.OutputFormatUnsupported)
	if n := len(p.calls("testkit")); n != 0 {
		t.Errorf("%d provider calls, want none", n)
	}
}
