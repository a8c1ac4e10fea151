package main

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

const (
	sampleRate = 16000
	mediaType  = "audio/pcm;rate=16000"
	// A word's beep lasts beepBase plus beepPerRune per letter; a pause of
	// pause seconds follows it.
	beepBase    = 0.08
	beepPerRune = 0.03
	pause       = 0.05
)

// Beep is the provider. It keeps no state, so concurrent calls need no
// locking. Embedding sdk.UnimplementedProvider answers Configure (accept
// anything) and Clone (KindUnsupported) for us.
type Beep struct {
	sdk.UnimplementedProvider
}

// NewSettings implements sdk.SettingsDecoder: Beep takes no settings, so
// the gateway refuses any key in its provider block (a typo) at `voxgate
// config check` and at start. A plugin with settings returns a pointer to
// its settings struct, fields tagged `setting:"key"`, and decodes into the
// same struct in Configure with sdk.DecodeSettings.
func (*Beep) NewSettings() any { return new(struct{}) }

// Describe implements sdk.Provider.
func (*Beep) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{
		ID:           "beep",
		Name:         "Beep (example)",
		DefaultModel: "beep-1",
		Models: []sdk.Model{{
			ID:               "beep-1",
			Name:             "Beep 1",
			Capabilities:     sdk.Capabilities{Streaming: true, Timestamps: true},
			OutputFormats:    []string{sdk.FormatPCM},
			NativeSampleRate: sampleRate,
			MaxTextChars:     2000,
		}},
	}, nil
}

// Voices implements sdk.Provider.
func (*Beep) Voices(context.Context, *sdk.VoicesRequest) ([]sdk.Voice, error) {
	return []sdk.Voice{
		{ID: "low", Name: "Low beep", Language: "en"},
		{ID: "high", Name: "High beep", Language: "en"},
	}, nil
}

// Synthesize implements sdk.Provider: the whole clip at once, with a
// timestamp per word that is exact because we placed the beeps ourselves.
func (*Beep) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	freq, err := check(req)
	if err != nil {
		return nil, err
	}
	resp := &sdk.SynthesizeResponse{MediaType: mediaType}
	pos := 0 // samples so far
	for _, w := range strings.Fields(req.Text) {
		// The gateway cancels ctx when the client leaves or the timeout
		// passes: a cancelled call must fail, not finish audio nobody will
		// hear (the conformance kit checks this).
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tone := beepSamples(w)
		if req.Timestamps {
			resp.Timestamps = append(resp.Timestamps, sdk.WordTimestamp{
				Text:  w,
				Start: float64(pos) / sampleRate,
				End:   float64(pos+tone) / sampleRate,
			})
		}
		resp.Audio = render(resp.Audio, freq, tone)
		pos += tone + pauseSamples
	}
	return resp, nil
}

// Stream implements sdk.Provider: one chunk per word, sent as soon as it is
// rendered. Only the first chunk names the media type.
func (*Beep) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	freq, err := check(req)
	if err != nil {
		return err
	}
	for i, w := range strings.Fields(req.Text) {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := sdk.Chunk{Data: render(nil, freq, beepSamples(w))}
		if i == 0 {
			c.MediaType = mediaType
		}
		// An error from send means the listener is gone: stop.
		if err := send(c); err != nil {
			return err
		}
	}
	return nil
}

// check validates a request and returns the voice's tone frequency. Errors
// are *sdk.Error values so the gateway can tell the caller what went wrong
// (an unknown voice is the caller's mistake: KindInvalidRequest).
func check(req *sdk.SynthesizeRequest) (float64, error) {
	if req.Format != "" && req.Format != sdk.FormatPCM {
		return 0, sdk.Errorf(sdk.KindInvalidRequest, "format %q is not supported; beep speaks pcm", req.Format)
	}
	if req.SampleRate != 0 && req.SampleRate != sampleRate {
		return 0, sdk.Errorf(sdk.KindInvalidRequest, "sample rate %d is not supported; beep speaks %d Hz", req.SampleRate, sampleRate)
	}
	if strings.TrimSpace(req.Text) == "" {
		return 0, sdk.Errorf(sdk.KindInvalidRequest, "nothing to say")
	}
	switch req.Voice {
	case "low", "":
		return 440, nil
	case "high":
		return 880, nil
	}
	return 0, sdk.Errorf(sdk.KindInvalidRequest, "unknown voice %q", req.Voice)
}

const pauseSamples = int(pause * sampleRate)

// beepSamples is the length of a word's beep in samples.
func beepSamples(word string) int {
	return int(math.Round((beepBase + beepPerRune*float64(utf8.RuneCountInString(word))) * sampleRate))
}

// render appends a beep of n samples at freq and the pause after it to dst,
// as 16-bit little-endian PCM.
func render(dst []byte, freq float64, n int) []byte {
	for i := range n + pauseSamples {
		var v float64
		if i < n {
			v = 0.25 * math.Sin(2*math.Pi*freq*float64(i)/sampleRate)
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(int16(v*math.MaxInt16)))
	}
	return dst
}
