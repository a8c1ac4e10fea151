package audio

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sample-rate bounds of WAV and PCM output requested by a client. Decoded
// sources may have any rate up to maxRate; these bound what we promise to
// produce on request.
const (
	// MinPCMRate is the lowest sampleRate a request may ask of WAV or PCM.
	MinPCMRate = 8000
	// MaxPCMRate is the highest sampleRate a request may ask of WAV or PCM.
	MaxPCMRate = 192000
	// OpusRate is the rate of Opus output: Opus codes at 48 kHz (or less
	// bandwidth within it) and every decoder produces 48 kHz.
	OpusRate = 48000
	// G711Rate is the rate of μ-law and A-law output.
	G711Rate = 8000
)

// Opus bitrates a request may ask for, in kbps. 32 kbps mono is
// transparent for speech; 6 is Opus's floor, 256 far past any need of
// one voice.
const (
	DefaultOpusBitrate = 32
	MinOpusBitrate     = 6
	MaxOpusBitrate     = 256
)

// Params are the whole-clip parameters of a speech or conversation
// request, shaped like the JSON body so a handler can decode into them
// directly. A nil field was absent from the request.
type Params struct {
	// VolumeDbfs is the RMS level to normalize the clip to, -60 to 0.
	VolumeDbfs *float64
	// Loudness levels the clip to an EBU R128 integrated loudness under a
	// true-peak ceiling (see NormalizeLoudness); not with VolumeDbfs.
	Loudness *LoudnessParams
	// Output is the requested encoding.
	Output *OutputParams
	// Measured, when set, is told what Loudness leveling did: the speech
	// service learns each voice's loudness from it (for streams) and
	// warns of a target out of reach. Not a request field.
	Measured func(LoudnessLeveling)
	// Stretch, when set and not 1, changes the clip's tempo by this factor
	// with its pitch kept (see Stretch). It is not a request field: the
	// speech service sets it from `speed` for models that cannot change
	// speed natively.
	Stretch float64
}

// OutputParams is the request's output object. Pointers tell an absent
// sampleRate or bitrate from an explicit (invalid) 0.
type OutputParams struct {
	// Format is one of OutputFormats: "wav", "pcm", "mp3", "opus",
	// "flac", "ulaw" or "alaw".
	Format string
	// SampleRate is the output rate in Hz; absent keeps the clip's rate
	// (for MP3, the nearest rate MP3 supports; Opus is always 48 kHz and
	// G.711 8 kHz).
	SampleRate *int
	// Bitrate is the MP3 or Opus bitrate in kbps; absent means
	// DefaultMP3Bitrate or DefaultOpusBitrate.
	Bitrate *int
}

// NeedsProcessing reports whether p asks for any whole-clip processing.
// When it does not, the caller sends the provider's bytes and media type
// through untouched and never decodes them.
func NeedsProcessing(p Params) bool {
	return p.VolumeDbfs != nil || p.Loudness != nil || p.Output != nil || (p.Stretch != 0 && p.Stretch != 1)
}

// Validate checks p against what this package can produce and returns one
// FieldError per problem (nil when p is valid), with paths from the request
// body's root: ["volumeDbfs"], ["output", "format"], ["output",
// "sampleRate"], ["output", "bitrate"], ["loudness", "integrated"],
// ["loudness", "truePeak"].
func (p Params) Validate() []FieldError {
	var errs []FieldError
	if v := p.VolumeDbfs; v != nil && !(*v >= MinVolumeDbfs && *v <= MaxVolumeDbfs) {
		errs = append(errs, FieldError{
			Path:    []string{"volumeDbfs"},
			Message: fmt.Sprintf("volumeDbfs must be between %g and %g", MinVolumeDbfs, MaxVolumeDbfs),
		})
	}
	if p.Loudness != nil {
		if p.VolumeDbfs != nil {
			errs = append(errs, FieldError{
				Path:    []string{"loudness"},
				Message: "give volumeDbfs (an RMS level) or loudness (EBU R128 integrated loudness and true peak), not both",
			})
		}
		errs = append(errs, p.Loudness.Validate("loudness")...)
	}
	if p.Output != nil {
		errs = append(errs, p.Output.validate()...)
	}
	return errs
}

func (o *OutputParams) validate() []FieldError {
	var errs []FieldError
	add := func(field, msg string) {
		errs = append(errs, FieldError{Path: []string{"output", field}, Message: msg})
	}
	formats := strings.Join(outputFormats, ", ")
	_, passOnly := Unavailable(o.Format)
	switch {
	case Encodes(o.Format), passOnly:
		// A format this build cannot encode (AAC) is still a valid ask: a
		// model that produces it natively passes it through; the speech
		// service refuses it only where it would have to encode it.
	case o.Format == "":
		add("format", "format is required: one of "+formats)
	default:
		add("format", fmt.Sprintf("format %q is not supported: use one of %s", o.Format, formats))
	}
	rateOK := false
	if r := o.SampleRate; r != nil {
		switch {
		case *r <= 0:
			add("sampleRate", "sampleRate must be a positive number of Hz")
		case o.Format == FormatMP3 && mp3BitratesAt(*r) == nil:
			add("sampleRate", "sampleRate for mp3 must be one of "+joinInts(mp3Rates))
		case o.Format == FormatOpus && *r != OpusRate:
			add("sampleRate", fmt.Sprintf("sampleRate for opus must be %d: Opus always decodes at 48 kHz", OpusRate))
		case (o.Format == FormatULaw || o.Format == FormatALaw) && *r != G711Rate:
			add("sampleRate", fmt.Sprintf("sampleRate for %s must be %d: G.711 is 8 kHz", o.Format, G711Rate))
		case (o.Format == FormatWAV || o.Format == FormatPCM || o.Format == FormatFLAC) && (*r < MinPCMRate || *r > MaxPCMRate):
			add("sampleRate", fmt.Sprintf("sampleRate for %s must be between %d and %d", o.Format, MinPCMRate, MaxPCMRate))
		default:
			rateOK = true
		}
	}
	if b := o.Bitrate; b != nil {
		switch {
		case o.Format == FormatOpus:
			if *b < MinOpusBitrate || *b > MaxOpusBitrate {
				add("bitrate", fmt.Sprintf("bitrate for opus must be between %d and %d kbps", MinOpusBitrate, MaxOpusBitrate))
			}
		case o.Format != FormatMP3:
			add("bitrate", "bitrate is only allowed with format mp3 or opus")
		case rateOK && !slices.Contains(mp3BitratesAt(*o.SampleRate), *b):
			add("bitrate", fmt.Sprintf("bitrate at %d Hz must be one of %s kbps", *o.SampleRate, joinInts(mp3BitratesAt(*o.SampleRate))))
		case !rateOK && mp3RatesFor(*b) == nil:
			add("bitrate", "bitrate must be one of "+joinInts(allMP3Bitrates())+" kbps")
		}
	}
	return errs
}

// Output turns validated request parameters into an Output, with zero for
// every value left to the clip (see Output).
func (o *OutputParams) Output() Output {
	out := Output{Format: o.Format}
	if o.SampleRate != nil {
		out.SampleRate = *o.SampleRate
	}
	if o.Bitrate != nil {
		out.Bitrate = *o.Bitrate
	}
	return out
}

// Output is an encoding for Encode. Zero SampleRate and Bitrate are
// resolved against the clip by Resolve.
type Output struct {
	// Format is one of OutputFormats.
	Format string
	// SampleRate is the rate to encode at in Hz; 0 keeps the clip's rate,
	// or for MP3 picks the MP3 rate nearest to it (Opus: 48 kHz, G.711:
	// 8 kHz, always).
	SampleRate int
	// Bitrate is the MP3 or Opus bitrate in kbps; 0 means
	// DefaultOpusBitrate for Opus and for MP3 DefaultMP3Bitrate, or the
	// highest bitrate of the sample rate if that is lower (64 kbps at 8 to
	// 12 kHz).
	Bitrate int
}

// Resolve fills in the zero fields of o for a clip at srcRate Hz and checks
// the combination, returning an error wrapping ErrInvalidParams if it is
// one the encoders cannot produce. Opus is always 48 kHz and G.711 8 kHz. For MP3 without a sample rate it keeps
// srcRate when MP3 supports it at the bitrate, otherwise picks the nearest
// (by ratio) MP3 rate that does.
func (o Output) Resolve(srcRate int) (Output, error) {
	switch o.Format {
	case FormatOpus, FormatULaw, FormatALaw:
		fixed, kbps := OpusRate, DefaultOpusBitrate
		if o.Format != FormatOpus {
			fixed, kbps = G711Rate, 0
		}
		if o.SampleRate == 0 {
			o.SampleRate = fixed
		}
		if o.Bitrate == 0 {
			o.Bitrate = kbps
		}
		if o.SampleRate != fixed || (o.Format == FormatOpus && (o.Bitrate < MinOpusBitrate || o.Bitrate > MaxOpusBitrate)) || (o.Format != FormatOpus && o.Bitrate != 0) {
			return o, fmt.Errorf("%w: %s at %d Hz, %d kbps", ErrInvalidParams, o.Format, o.SampleRate, o.Bitrate)
		}
		return o, nil
	case FormatWAV, FormatPCM, FormatFLAC:
		if o.Bitrate != 0 {
			return o, fmt.Errorf("%w: bitrate is only allowed with format mp3 or opus", ErrInvalidParams)
		}
		if o.SampleRate == 0 {
			o.SampleRate = srcRate
		}
		if o.SampleRate <= 0 || o.SampleRate > maxRate {
			return o, fmt.Errorf("%w: sample rate %d", ErrInvalidParams, o.SampleRate)
		}
		return o, nil
	case FormatMP3:
		if o.SampleRate == 0 {
			rates := mp3Rates
			if o.Bitrate != 0 {
				rates = mp3RatesFor(o.Bitrate)
			}
			o.SampleRate = nearestRate(rates, srcRate)
		}
		valid := mp3BitratesAt(o.SampleRate)
		if valid == nil {
			return o, fmt.Errorf("%w: MP3 has no sample rate %d", ErrInvalidParams, o.SampleRate)
		}
		if o.Bitrate == 0 {
			o.Bitrate = min(DefaultMP3Bitrate, valid[len(valid)-1])
		}
		if !slices.Contains(valid, o.Bitrate) {
			return o, fmt.Errorf("%w: MP3 cannot encode %d kbps at %d Hz", ErrInvalidParams, o.Bitrate, o.SampleRate)
		}
		return o, nil
	}
	return o, fmt.Errorf("%w: output format %q", ErrInvalidParams, o.Format)
}

// mp3RatesFor returns the MP3 sample rates at which kbps is a valid
// bitrate, ascending; nil if none.
func mp3RatesFor(kbps int) []int {
	var rates []int
	for _, r := range mp3Rates {
		if slices.Contains(mp3BitratesAt(r), kbps) {
			rates = append(rates, r)
		}
	}
	return rates
}

func allMP3Bitrates() []int {
	all := slices.Concat(mpeg1Bitrates, mpeg2Bitrates)
	slices.Sort(all)
	return slices.Compact(all)
}

// nearestRate returns the rate of rates closest to want by ratio (the
// higher one on a tie); rates is non-empty.
func nearestRate(rates []int, want int) int {
	best, bestDist := rates[0], math.Inf(1)
	for _, r := range rates {
		d := math.Abs(math.Log(float64(r) / float64(max(want, 1))))
		if d <= bestDist {
			best, bestDist = r, d
		}
	}
	return best
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
