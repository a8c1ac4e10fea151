package fakeupstream

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/voxgate/voxgate/gateway/audio"
)

// toneAAC is half a second of the 440 Hz tone as AAC-LC in ADTS frames,
// 24 kHz mono 32 kbit/s, made by ffmpeg:
//
//	ffmpeg -f lavfi -i sine=frequency=440:sample_rate=24000:duration=0.5 -ac 1 -c:a aac -b:a 32k -f adts tone.aac
//
// ADTS frames stand alone, so the fakes tile them to any length. The
// gateway has no AAC encoder (Debian carries none outside FFmpeg), and a
// provider's AAC only ever passes through it untouched.
//
//go:embed tone.aac
var toneAAC []byte

// AACRate is the sample rate of the fakes' AAC.
const AACRate = 24000

// Encoded renders u in format at rate Hz and bitrate kbit/s (0: the
// format's default), as a provider answering a request for that encoding
// would: PCM and WAV as PCM and WAV do, MP3 at 44.1 kHz and 64 kbit/s (or
// no bitrate) from the tiled tone, any other MP3, Opus, FLAC and G.711
// encoded from the PCM by the gateway's own encoders (a fake's encoder
// only has to produce valid audio of the right length: the gateway passes
// these answers through, and tests compare bytes), and AAC tiled from the
// ADTS tone at AACRate. It returns the body and its media type.
func (s *Studio) Encoded(u Utterance, format string, rate, bitrate int) (Audio, string, error) {
	switch format {
	case audio.FormatPCM:
		return s.PCM(u, rate), fmt.Sprintf("audio/pcm;rate=%d", rate), nil
	case audio.FormatWAV:
		return s.WAV(u, rate), "audio/wav", nil
	case audio.FormatMP3:
		if (rate == 0 || rate == 44100) && (bitrate == 0 || bitrate == 64) {
			return s.MP3(u), "audio/mpeg", nil
		}
	case "aac":
		return s.AAC(u), "audio/aac", nil
	}
	key := encodedKey{format: format, rate: rate, bitrate: bitrate, seconds: u.Seconds, text: u.text(), speech: u.speech}
	s.mu.Lock()
	hit, ok := s.encoded[key]
	s.mu.Unlock()
	if ok {
		var a Audio
		a.add(hit.data)
		return a, hit.mediaType, nil
	}
	src := rate
	switch {
	case format == audio.FormatOpus || src == 0:
		src = audio.OpusRate
	case format == audio.FormatULaw || format == audio.FormatALaw:
		src = audio.G711Rate
	}
	pcm := s.PCM(u, src).Bytes()
	clip := &audio.Clip{Rate: src, Samples: make([]float32, len(pcm)/2)}
	for i := range clip.Samples {
		clip.Samples[i] = float32(int16(binary.LittleEndian.Uint16(pcm[2*i:]))) / 32768
	}
	data, mediaType, err := audio.Encode(clip, audio.Output{Format: format, SampleRate: rate, Bitrate: bitrate})
	if err != nil {
		return Audio{}, "", fmt.Errorf("fake %s at %d Hz, %d kbit/s: %w", format, rate, bitrate, err)
	}
	s.mu.Lock()
	if len(s.encoded) >= maxEncoded {
		clear(s.encoded)
	}
	s.encoded[key] = encodedAudio{data: data, mediaType: mediaType}
	s.mu.Unlock()
	var a Audio
	a.add(data)
	return a, mediaType, nil
}

// AAC renders u as ADTS frames of the tone covering its length.
func (s *Studio) AAC(u Utterance) Audio {
	frames, err := adtsFrames(toneAAC)
	if err != nil {
		panic("embedded tone.aac: " + err.Error()) // a build defect, caught by the package's tests
	}
	n := max(int(math.Ceil(u.Seconds*AACRate/1024)), 1)
	var a Audio
	for i := range n {
		a.add(frames[i%len(frames)])
	}
	return a
}

// adtsFrames splits an ADTS stream into its frames.
func adtsFrames(data []byte) ([][]byte, error) {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 7 || data[0] != 0xff || data[1]&0xf6 != 0xf0 {
			return nil, errors.New("not an ADTS frame")
		}
		n := int(data[3]&3)<<11 | int(data[4])<<3 | int(data[5]>>5)
		if n < 7 || n > len(data) {
			return nil, errors.New("truncated ADTS frame")
		}
		out = append(out, data[:n])
		data = data[n:]
	}
	if len(out) == 0 {
		return nil, errors.New("no frames")
	}
	return out, nil
}

// text is the utterance's characters, which with its length decide its
// audio.
func (u Utterance) text() string {
	var b strings.Builder
	for _, c := range u.Chars {
		b.WriteString(c.Text)
	}
	return b.String()
}
