package audio

import (
	"fmt"
	"mime"
	"slices"
	"strconv"
	"strings"
)

// Output formats, the values of the request's output.format. They match the
// provider SDK's FormatWAV, FormatPCM and FormatMP3.
const (
	// FormatWAV is a RIFF/WAVE file; Encode writes 16-bit PCM mono.
	FormatWAV = "wav"
	// FormatPCM is raw 16-bit little-endian mono PCM, media type
	// "audio/pcm;rate=N".
	FormatPCM = "pcm"
	// FormatMP3 is MPEG-1/2/2.5 Layer III, media type "audio/mpeg".
	FormatMP3 = "mp3"
	// FormatOpus is Opus in Ogg (RFC 7845), media type
	// "audio/ogg;codecs=opus". Opus decodes at 48 kHz.
	FormatOpus = "opus"
	// FormatFLAC is FLAC (RFC 9639), 16-bit mono, media type "audio/flac".
	FormatFLAC = "flac"
	// FormatULaw is raw G.711 μ-law at 8 kHz, one byte a sample, media
	// type "audio/PCMU;rate=8000" (RFC 4856, the type RTP and SIP use).
	FormatULaw = "ulaw"
	// FormatALaw is raw G.711 A-law at 8 kHz, media type
	// "audio/PCMA;rate=8000".
	FormatALaw = "alaw"
)

// outputFormats are the values of output.format, in the order the API
// lists them.
var outputFormats = []string{FormatWAV, FormatPCM, FormatMP3, FormatOpus, FormatFLAC, FormatULaw, FormatALaw}

// OutputFormats returns the formats Encode produces, the values
// output.format may take.
func OutputFormats() []string { return slices.Clone(outputFormats) }

// Unavailable reports whether format is a known audio format this build
// cannot produce, with the reason; the API answers it with 422 rather
// than treating it as a typo.
func Unavailable(format string) (reason string, ok bool) {
	if format == "aac" {
		return "AAC is not available: Debian carries no AAC encoder outside FFmpeg (libfdk-aac is non-free), and the gateway does not link FFmpeg for one format", true
	}
	return "", false
}

// Encodes reports whether format is an output format Encode produces, the
// values output.format may take.
func Encodes(format string) bool {
	return slices.Contains(outputFormats, format)
}

// maxRate bounds the rate parameter of raw PCM media types; anything larger
// is a typo or an attack on the output buffer size, not audio.
const maxRate = 768000

// MediaType is a parsed audio media type.
type MediaType struct {
	// Format is one of the Format constants.
	Format string
	// Rate is the sample rate of raw PCM and G.711 (from the rate
	// parameter); 0 for formats whose streams carry their own rate.
	Rate int
	// Channels is the number of interleaved channels of raw PCM (the
	// channels parameter, default 1); 0 for WAV and MP3.
	Channels int
	// BigEndian is set for audio/L16, which RFC 2586 defines as network
	// byte order; audio/pcm is little-endian.
	BigEndian bool
}

// ParseMediaType parses an audio media type as providers and clients send
// it. Accepted, case-insensitively:
//
//   - audio/wav, audio/x-wav, audio/wave, audio/vnd.wave: RIFF/WAVE;
//   - audio/mpeg, audio/mp3, audio/mpeg3, audio/x-mpeg, audio/x-mp3: MP3;
//   - audio/pcm;rate=N[;channels=C]: raw 16-bit little-endian PCM;
//   - audio/L16;rate=N[;channels=C]: raw 16-bit big-endian PCM (RFC 2586);
//   - audio/PCMU[;rate=N], audio/basic, audio/x-mulaw: raw G.711 μ-law
//     (8 kHz unless rate says otherwise);
//   - audio/PCMA[;rate=N], audio/x-alaw: raw G.711 A-law.
//
// Other types, and raw PCM without a valid rate, give an error wrapping
// ErrUnsupportedMediaType.
func ParseMediaType(s string) (MediaType, error) {
	typ, params, ok := quickMediaType(s)
	if !ok {
		var err error
		if typ, params.m, err = mime.ParseMediaType(s); err != nil {
			return MediaType{}, fmt.Errorf("%w: %q: %v", ErrUnsupportedMediaType, s, err)
		}
	}
	switch typ {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return MediaType{Format: FormatWAV}, nil
	case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/x-mp3":
		return MediaType{Format: FormatMP3}, nil
	case "audio/pcmu", "audio/basic", "audio/x-mulaw", "audio/pcma", "audio/x-alaw":
		m := MediaType{Format: FormatULaw, Rate: 8000, Channels: 1}
		if typ == "audio/pcma" || typ == "audio/x-alaw" {
			m.Format = FormatALaw
		}
		if r, ok := params.get("rate"); ok {
			rate, err := strconv.Atoi(r)
			if err != nil || rate <= 0 || rate > maxRate {
				return MediaType{}, fmt.Errorf("%w: %q: rate must be between 1 and %d", ErrUnsupportedMediaType, s, maxRate)
			}
			m.Rate = rate
		}
		return m, nil
	case "audio/pcm", "audio/l16":
		m := MediaType{Format: FormatPCM, Channels: 1, BigEndian: typ == "audio/l16"}
		r, _ := params.get("rate")
		rate, err := strconv.Atoi(r)
		if err != nil || rate <= 0 || rate > maxRate {
			return MediaType{}, fmt.Errorf("%w: %q needs a rate parameter between 1 and %d", ErrUnsupportedMediaType, s, maxRate)
		}
		m.Rate = rate
		if ch, ok := params.get("channels"); ok {
			n, err := strconv.Atoi(ch)
			if err != nil || n < 1 || n > 8 {
				return MediaType{}, fmt.Errorf("%w: %q: channels must be 1 to 8", ErrUnsupportedMediaType, s)
			}
			m.Channels = n
		}
		return m, nil
	}
	return MediaType{}, fmt.Errorf("%w: %q", ErrUnsupportedMediaType, s)
}

// String renders the media type in the form the gateway sends: "audio/wav",
// "audio/mpeg", "audio/pcm;rate=N" (with ";channels=C" only when not mono),
// "audio/L16;rate=N[;channels=C]", "audio/ogg;codecs=opus", "audio/flac",
// "audio/PCMU;rate=N" or "audio/PCMA;rate=N".
func (m MediaType) String() string {
	switch m.Format {
	case FormatWAV:
		return "audio/wav"
	case FormatMP3:
		return "audio/mpeg"
	case FormatOpus:
		return "audio/ogg;codecs=opus"
	case FormatFLAC:
		return "audio/flac"
	case FormatULaw:
		return "audio/PCMU;rate=" + strconv.Itoa(m.Rate)
	case FormatALaw:
		return "audio/PCMA;rate=" + strconv.Itoa(m.Rate)
	case FormatPCM:
		var b strings.Builder
		if m.BigEndian {
			b.WriteString("audio/L16")
		} else {
			b.WriteString("audio/pcm")
		}
		b.WriteString(";rate=")
		b.WriteString(strconv.Itoa(m.Rate))
		if m.Channels > 1 {
			b.WriteString(";channels=")
			b.WriteString(strconv.Itoa(m.Channels))
		}
		return b.String()
	}
	return ""
}

// mediaParams are a media type's parameters, lower-case names to values:
// the two or fewer quickMediaType reads in place, or mime's map.
type mediaParams struct {
	n     int
	names [2]string
	vals  [2]string
	m     map[string]string
}

func (p *mediaParams) get(name string) (string, bool) {
	if p.m != nil {
		v, ok := p.m[name]
		return v, ok
	}
	for i := range p.n {
		if p.names[i] == name {
			return p.vals[i], true
		}
	}
	return "", false
}

// quickMediaType parses the forms providers and the gateway write
// ("audio/mpeg", "audio/pcm;rate=24000", "audio/pcm; rate=24000;
// channels=2"): a lower-case type and at most two lower-case parameters,
// unquoted. It declines anything else (ok false) for mime.ParseMediaType,
// and gives what mime.ParseMediaType would for what it takes
// (FuzzQuickMediaType). Hot path: mime.ParseMediaType allocates a map and
// lower-cased copies, and a stream's media type is parsed more than once
// before its first byte (the meter, the provenance mark).
func quickMediaType(s string) (typ string, params mediaParams, ok bool) {
	typ, rest, semi := strings.Cut(s, ";")
	typ = strings.TrimSpace(typ)
	slash := strings.IndexByte(typ, '/')
	if slash <= 0 || !lowerToken(typ[:slash]) || !lowerToken(typ[slash+1:]) {
		return "", params, false
	}
	if !semi {
		return typ, params, true
	}
	for {
		var param string
		param, rest, semi = strings.Cut(rest, ";")
		name, value, found := strings.Cut(strings.Trim(param, " \t"), "=")
		// A name with '*' is an RFC 2231 continuation, which mime joins.
		if params.n == len(params.names) || !found || !lowerToken(name) || strings.IndexByte(name, '*') >= 0 || !valueToken(value) {
			return "", params, false
		}
		for i := range params.n {
			if params.names[i] == name {
				return "", params, false // mime refuses a repeated name
			}
		}
		params.names[params.n], params.vals[params.n] = name, value
		params.n++
		if !semi {
			return typ, params, true
		}
	}
}

// tokenSpecials are the characters besides letters and digits an RFC
// 2045 token may hold.
const tokenSpecials = "!#$%&'*+-.^_`|~"

// lowerToken reports whether s is a non-empty token without upper-case
// letters (mime.ParseMediaType lower-cases names; these need no copy).
func lowerToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte(tokenSpecials, c) >= 0) {
			return false
		}
	}
	return s != ""
}

// valueToken reports whether s is a non-empty token, of any case.
func valueToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(tokenSpecials, c) >= 0) {
			return false
		}
	}
	return s != ""
}
