package sdktest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/hajimehoshi/go-mp3"

	"github.com/voxgate/voxgate/sdk"
)

// Clip describes audio that Decode could read.
type Clip struct {
	// Format is sdk.FormatPCM, sdk.FormatWAV or sdk.FormatMP3.
	Format string
	// SampleRate is in Hz.
	SampleRate int
	// Channels is the channel count of the decoded samples (always 2 for
	// MP3, which the decoder renders as stereo).
	Channels int
	// Frames is the number of samples per channel.
	Frames int
	// Duration is Frames at SampleRate.
	Duration time.Duration
}

// Seconds returns the clip's duration in seconds.
func (c Clip) Seconds() float64 { return c.Duration.Seconds() }

// FormatOf returns the sdk format name (sdk.FormatPCM, FormatWAV,
// FormatMP3) of a media type, or "" if it is none of them.
func FormatOf(mediaType string) string {
	mt, params, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return ""
	}
	switch mt {
	case "audio/pcm", "audio/l16":
		return sdk.FormatPCM
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return sdk.FormatWAV
	case "audio/mpeg", "audio/mp3":
		return sdk.FormatMP3
	case "audio/ogg":
		// Ogg holds Vorbis too: only Opus is a format of the sdk's.
		if strings.EqualFold(params["codecs"], "opus") {
			return sdk.FormatOpus
		}
	case "audio/opus":
		return sdk.FormatOpus
	case "audio/flac", "audio/x-flac":
		return sdk.FormatFLAC
	case "audio/aac", "audio/aacp", "audio/x-aac":
		return sdk.FormatAAC
	case "audio/pcmu", "audio/basic", "audio/x-mulaw":
		return sdk.FormatULaw
	case "audio/pcma", "audio/x-alaw":
		return sdk.FormatALaw
	}
	return ""
}

// Decode reads a whole clip of the given media type ("audio/wav",
// "audio/mpeg", or "audio/pcm;rate=N" for 16-bit little-endian mono PCM)
// and reports what it holds. It fails on anything a player would choke
// on: a bad header, a truncated sample, an undecodable MP3 frame.
func Decode(mediaType string, data []byte) (Clip, error) {
	_, params, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return Clip{}, fmt.Errorf("media type %q: %w", mediaType, err)
	}
	switch FormatOf(mediaType) {
	case sdk.FormatPCM:
		rate, err := strconv.Atoi(params["rate"])
		if err != nil || rate <= 0 {
			return Clip{}, fmt.Errorf("media type %q: rate must be a positive integer", mediaType)
		}
		channels := 1
		if c, ok := params["channels"]; ok {
			if channels, err = strconv.Atoi(c); err != nil || channels <= 0 {
				return Clip{}, fmt.Errorf("media type %q: bad channels", mediaType)
			}
		}
		if len(data)%(2*channels) != 0 {
			return Clip{}, fmt.Errorf("16-bit PCM of %d channel(s) has %d bytes, not a whole number of samples", channels, len(data))
		}
		return newClip(sdk.FormatPCM, rate, channels, len(data)/(2*channels)), nil
	case sdk.FormatWAV:
		return decodeWAV(data)
	case sdk.FormatMP3:
		return decodeMP3(data)
	case sdk.FormatOpus:
		return decodeOggOpus(data)
	case sdk.FormatFLAC:
		return decodeFLAC(data)
	case sdk.FormatAAC:
		return decodeADTS(data)
	case sdk.FormatULaw, sdk.FormatALaw:
		rate := 8000 // audio/basic is 8 kHz by definition
		if r, ok := params["rate"]; ok {
			if rate, err = strconv.Atoi(r); err != nil || rate <= 0 {
				return Clip{}, fmt.Errorf("media type %q: rate must be a positive integer", mediaType)
			}
		}
		return newClip(FormatOf(mediaType), rate, 1, len(data)), nil
	}
	return Clip{}, fmt.Errorf("media type %q is not one the kit can decode (audio/wav, audio/mpeg, audio/pcm;rate=N, audio/ogg;codecs=opus, audio/flac, audio/aac, audio/PCMU, audio/PCMA)", mediaType)
}

func newClip(format string, rate, channels, frames int) Clip {
	return Clip{
		Format:     format,
		SampleRate: rate,
		Channels:   channels,
		Frames:     frames,
		Duration:   time.Duration(float64(frames) / float64(rate) * float64(time.Second)),
	}
}

// decodeWAV walks the RIFF chunks of a WAV file. Hand-written: the format
// is a few fixed fields, and a library would add a dependency to every
// plugin author's test build for forty lines.
func decodeWAV(data []byte) (Clip, error) {
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return Clip{}, errors.New("wav: no RIFF/WAVE header")
	}
	var (
		haveFmt                     bool
		tag, channels, bits, blockA int
		rate                        int
	)
	rest := data[12:]
	for len(rest) >= 8 {
		id := string(rest[0:4])
		size := int(binary.LittleEndian.Uint32(rest[4:8]))
		body := rest[8:]
		if id == "data" {
			if !haveFmt {
				return Clip{}, errors.New("wav: data chunk before fmt chunk")
			}
			// A streamed WAV cannot know its length up front and writes 0
			// or 0xFFFFFFFF; the data then runs to the end of the file.
			if size == 0 || size == 0xFFFFFFFF || size > len(body) {
				if size != 0 && size != 0xFFFFFFFF {
					return Clip{}, fmt.Errorf("wav: data chunk claims %d bytes, file holds %d", size, len(body))
				}
				size = len(body)
			}
			if size%blockA != 0 {
				return Clip{}, fmt.Errorf("wav: %d data bytes is not a whole number of %d-byte frames", size, blockA)
			}
			return newClip(sdk.FormatWAV, rate, channels, size/blockA), nil
		}
		if size > len(body) {
			return Clip{}, fmt.Errorf("wav: %q chunk claims %d bytes, file holds %d", id, size, len(body))
		}
		if id == "fmt " {
			if size < 16 {
				return Clip{}, errors.New("wav: fmt chunk too short")
			}
			tag = int(binary.LittleEndian.Uint16(body[0:2]))
			channels = int(binary.LittleEndian.Uint16(body[2:4]))
			rate = int(binary.LittleEndian.Uint32(body[4:8]))
			blockA = int(binary.LittleEndian.Uint16(body[12:14]))
			bits = int(binary.LittleEndian.Uint16(body[14:16]))
			switch {
			case tag != 1 && tag != 3 && tag != 0xFFFE:
				return Clip{}, fmt.Errorf("wav: format tag %#x is not PCM or float", tag)
			case channels <= 0 || rate <= 0 || bits <= 0 || bits%8 != 0:
				return Clip{}, fmt.Errorf("wav: bad fmt (channels %d, rate %d, bits %d)", channels, rate, bits)
			case blockA != channels*bits/8:
				return Clip{}, fmt.Errorf("wav: block align %d, want %d", blockA, channels*bits/8)
			}
			haveFmt = true
		}
		// Chunks are padded to an even length.
		size += size & 1
		if size > len(body) {
			size = len(body)
		}
		rest = body[size:]
	}
	return Clip{}, errors.New("wav: no data chunk")
}

// decodeMP3 decodes every frame (not just the header) so that a corrupt
// stream fails here rather than in a listener's player.
func decodeMP3(data []byte) (Clip, error) {
	d, err := mp3.NewDecoder(bytes.NewReader(data))
	if err != nil {
		return Clip{}, fmt.Errorf("mp3: %w", err)
	}
	n, err := io.Copy(io.Discard, d)
	if err != nil {
		return Clip{}, fmt.Errorf("mp3: decode: %w", err)
	}
	if d.SampleRate() <= 0 {
		return Clip{}, errors.New("mp3: no sample rate")
	}
	// go-mp3 renders 16-bit stereo: 4 bytes per frame.
	return newClip(sdk.FormatMP3, d.SampleRate(), 2, int(n/4)), nil
}
