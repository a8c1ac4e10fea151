package sdk

import (
	"slices"
	"strconv"
)

// More audio formats a model may produce natively, besides FormatPCM,
// FormatWAV and FormatMP3. The gateway passes a format the model produces
// through untouched when a client asks for it, so a plugin lists every
// format its provider's API offers (Model.Encodings), not only the three
// the gateway can decode.
const (
	// FormatOpus is Opus in an Ogg container (RFC 7845), media type
	// "audio/ogg;codecs=opus".
	FormatOpus = "opus"
	// FormatFLAC is a FLAC file, media type "audio/flac".
	FormatFLAC = "flac"
	// FormatAAC is AAC in ADTS frames, media type "audio/aac".
	FormatAAC = "aac"
	// FormatULaw is raw G.711 μ-law, one byte a sample, media type
	// "audio/PCMU;rate=N" (RFC 4856).
	FormatULaw = "ulaw"
	// FormatALaw is raw G.711 A-law, media type "audio/PCMA;rate=N".
	FormatALaw = "alaw"
)

// Encoding is one way a model can encode its audio natively: a format at a
// sample rate, and at a bitrate where the provider's API lets the caller
// choose one. The gateway asks for exactly the encoding a client asked for
// when the model lists it, and passes the provider's bytes through; it
// converts only what no listed encoding gives.
type Encoding struct {
	// Format is one of the Format constants or a provider-specific name.
	Format string
	// SampleRate is in Hz; 0 when the provider does not say (it picks).
	SampleRate int
	// Bitrate is in kbit/s for compressed formats whose bitrate the
	// caller chooses; 0 when it is the provider's own choice (or the
	// format is uncompressed).
	Bitrate int
}

// String names e the way ElevenLabs names its output formats, which
// reads well in logs and headers: "pcm_24000", "mp3_44100_128", "opus".
func (e Encoding) String() string {
	b := make([]byte, 0, 24)
	b = append(b, e.Format...)
	if e.SampleRate > 0 {
		b = strconv.AppendInt(append(b, '_'), int64(e.SampleRate), 10)
		if e.Bitrate > 0 {
			b = strconv.AppendInt(append(b, '_'), int64(e.Bitrate), 10)
		}
	} else if e.Bitrate > 0 {
		b = strconv.AppendInt(append(b, "_0_"...), int64(e.Bitrate), 10)
	}
	return string(b)
}

// MediaType is the media type of audio in encoding e, as
// SynthesizeResponse.MediaType and Chunk.MediaType carry it. Raw formats
// need their rate: e.SampleRate must be set for them. A provider-specific
// format has none here ("application/octet-stream"); its plugin names it.
func MediaType(e Encoding) string {
	rate := strconv.Itoa(e.SampleRate)
	switch e.Format {
	case FormatPCM:
		return "audio/pcm;rate=" + rate
	case FormatWAV:
		return "audio/wav"
	case FormatMP3:
		return "audio/mpeg"
	case FormatOpus:
		return "audio/ogg;codecs=opus"
	case FormatFLAC:
		return "audio/flac"
	case FormatAAC:
		return "audio/aac"
	case FormatULaw:
		return "audio/PCMU;rate=" + rate
	case FormatALaw:
		return "audio/PCMA;rate=" + rate
	}
	return "application/octet-stream"
}

// KnownFormat reports whether f is one of the Format constants.
func KnownFormat(f string) bool {
	switch f {
	case FormatPCM, FormatWAV, FormatMP3, FormatOpus, FormatFLAC, FormatAAC, FormatULaw, FormatALaw:
		return true
	}
	return false
}

// NativeEncodings returns m's native encodings: m.Encodings when the
// plugin lists them, else what OutputFormats, SampleRates and
// NativeSampleRate say, the way plugins written before Encodings existed
// describe a model: PCM and WAV at the native rate and then at every
// listed rate, any other format at the native rate with the provider's
// own bitrate.
func (m *Model) NativeEncodings() []Encoding {
	if len(m.Encodings) > 0 {
		return m.Encodings
	}
	rates := make([]int, 0, len(m.SampleRates)+1)
	if m.NativeSampleRate > 0 || len(m.SampleRates) == 0 {
		rates = append(rates, m.NativeSampleRate)
	}
	for _, r := range m.SampleRates {
		if !slices.Contains(rates, r) {
			rates = append(rates, r)
		}
	}
	var out []Encoding
	for _, f := range m.OutputFormats {
		if f != FormatPCM && f != FormatWAV {
			out = append(out, Encoding{Format: f, SampleRate: m.NativeSampleRate})
			continue
		}
		for _, r := range rates {
			out = append(out, Encoding{Format: f, SampleRate: r})
		}
	}
	return out
}

// FindEncoding returns the first of m's native encodings in format at rate
// and bitrate, where 0 for rate or bitrate means "whichever the model
// lists first": the model's own default for the format (and the rate).
// An encoding whose own SampleRate or Bitrate is 0 (the provider picks)
// matches only a request that leaves it to the provider too.
func (m *Model) FindEncoding(format string, rate, bitrate int) (Encoding, bool) {
	return findEncoding(m.NativeEncodings(), format, rate, bitrate)
}

func findEncoding(es []Encoding, format string, rate, bitrate int) (Encoding, bool) {
	for _, e := range es {
		if e.Format == format && (rate == 0 || e.SampleRate == rate) && (bitrate == 0 || e.Bitrate == bitrate) {
			return e, true
		}
	}
	return Encoding{}, false
}

// Filled returns m with OutputFormats, SampleRates and NativeSampleRate
// derived from Encodings where they are empty, as Serve describes the
// model to the gateway: what a caller that holds the plugin's own value
// (an in-process test) sees of it over the wire.
func (m Model) Filled() Model {
	m.OutputFormats = slices.Clone(m.OutputFormats)
	m.SampleRates = slices.Clone(m.SampleRates)
	m.describeEncodings()
	return m
}

// NativeStreamEncodings returns the encodings m streams natively:
// StreamEncodings when the plugin lists them, else NativeEncodings.
func (m *Model) NativeStreamEncodings() []Encoding {
	if len(m.StreamEncodings) > 0 {
		return m.StreamEncodings
	}
	return m.NativeEncodings()
}

// FindStreamEncoding is FindEncoding among the encodings m streams.
func (m *Model) FindStreamEncoding(format string, rate, bitrate int) (Encoding, bool) {
	return findEncoding(m.NativeStreamEncodings(), format, rate, bitrate)
}

// describeEncodings fills the fields older gateways read from a model that
// lists Encodings and leaves OutputFormats empty: the formats in the order
// they first appear, the PCM rates, and the first PCM (else first) rate as
// the native one. Serve applies it to every model it describes, so a
// plugin author lists Encodings and nothing else.
func (m *Model) describeEncodings() {
	if len(m.Encodings) == 0 {
		return
	}
	if len(m.OutputFormats) == 0 {
		for _, e := range m.Encodings {
			if !slices.Contains(m.OutputFormats, e.Format) {
				m.OutputFormats = append(m.OutputFormats, e.Format)
			}
		}
	}
	if len(m.SampleRates) == 0 {
		for _, e := range m.Encodings {
			if e.Format == FormatPCM && e.SampleRate > 0 && !slices.Contains(m.SampleRates, e.SampleRate) {
				m.SampleRates = append(m.SampleRates, e.SampleRate)
			}
		}
	}
	if m.NativeSampleRate == 0 {
		if e, ok := m.FindEncoding(FormatPCM, 0, 0); ok {
			m.NativeSampleRate = e.SampleRate
		} else {
			m.NativeSampleRate = m.Encodings[0].SampleRate
		}
	}
}
