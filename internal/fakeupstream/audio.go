package fakeupstream

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// toneMP3 is one second of the 440 Hz tone, MPEG-1 Layer III, 44.1 kHz
// mono 64 kbit/s, encoded by LAME with the bit reservoir off (so every
// frame decodes on its own) and no ID3 or Xing tag:
//
//	ffmpeg -f lavfi -i sine=frequency=440:sample_rate=44100:duration=1 -af volume=0.5 \
//	  -ac 1 -c:a libmp3lame -b:a 64k -reservoir 0 -write_xing 0 -id3v2_version 0 -f mp3 tone.mp3
//
// Because no frame borrows bits from an earlier one, any sequence of its
// frames is a valid MP3 stream: the fakes tile them to any length.
//
//go:embed tone.mp3
var toneMP3 []byte

// Studio holds the audio blocks a fake tiles its answers from: one second
// of tone and of silence per sample rate (rendered on first use) and the
// frames of the MP3 tone. It is safe for concurrent use; a server makes
// one at start.
type Studio struct {
	mu     sync.Mutex
	tone   map[int][]byte // 1 s of 16-bit LE mono tone per rate
	silent map[int][]byte // 1 s of 16-bit silence per rate
	mp3    [][]byte       // frames of toneMP3
	mp3Sec float64        // duration of one MP3 frame
	// encoded keeps what Encoded encoded, by encoding and utterance: a
	// fake answers the same text the same way, and encoding per request
	// (LAME, Opus, FLAC) took long enough on a loaded machine to pass a
	// test's 1 s provider timeout. Bounded: cleared when full.
	encoded map[encodedKey]encodedAudio
}

type encodedKey struct {
	format        string
	rate, bitrate int
	seconds       float64
	text          string
	speech        *recording
}

type encodedAudio struct {
	data      []byte
	mediaType string
}

// maxEncoded bounds Studio.encoded.
const maxEncoded = 256

// NewStudio parses the MP3 tone's frames and returns a Studio.
func NewStudio() (*Studio, error) {
	frames, rate, err := mp3Frames(toneMP3)
	if err != nil {
		return nil, fmt.Errorf("embedded tone.mp3: %w", err)
	}
	return &Studio{
		tone:    map[int][]byte{},
		silent:  map[int][]byte{},
		encoded: map[encodedKey]encodedAudio{},
		mp3:     frames,
		mp3Sec:  1152 / float64(rate),
	}, nil
}

// Audio is a rendered body as a list of parts that alias the Studio's
// read-only blocks: writing it copies nothing.
type Audio struct {
	Parts [][]byte
	Len   int
}

func (a *Audio) add(p []byte) {
	if len(p) > 0 {
		a.Parts = append(a.Parts, p)
		a.Len += len(p)
	}
}

// Bytes returns the audio as one new slice.
func (a Audio) Bytes() []byte {
	out := make([]byte, 0, a.Len)
	for _, p := range a.Parts {
		out = append(out, p...)
	}
	return out
}

func (s *Studio) blocks(rate int) (tone, silent []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.tone[rate]; ok {
		return b, s.silent[rate]
	}
	tone = make([]byte, 2*rate)
	for i := range rate {
		// A whole number of cycles per second, so blocks tile without a
		// click.
		v := 0.3 * math.Sin(2*math.Pi*ToneHz*float64(i)/float64(rate))
		binary.LittleEndian.PutUint16(tone[2*i:], uint16(int16(v*math.MaxInt16)))
	}
	silent = make([]byte, 2*rate)
	s.tone[rate], s.silent[rate] = tone, silent
	return tone, silent
}

// PCM renders u as 16-bit little-endian mono PCM at rate.
func (s *Studio) PCM(u Utterance, rate int) Audio {
	if u.speech != nil {
		return u.speech.pcm(rate)
	}
	tone, silent := s.blocks(rate)
	var a Audio
	pos := 0 // samples written
	fill := func(block []byte, until int) {
		for pos < until {
			n := min(until-pos, rate)
			a.add(block[:2*n])
			pos += n
		}
	}
	for _, c := range u.Chars {
		fill(silent, frames(c.Start, rate))
		if isSpace(c.Text) {
			fill(silent, frames(c.End, rate))
		} else {
			fill(tone, frames(c.End, rate))
		}
	}
	fill(silent, frames(u.Seconds, rate))
	return a
}

// WAV renders u as a RIFF/WAVE file of 16-bit mono PCM at rate, with
// exact chunk sizes.
func (s *Studio) WAV(u Utterance, rate int) Audio {
	pcm := s.PCM(u, rate)
	a := Audio{Parts: make([][]byte, 0, len(pcm.Parts)+1)}
	a.add(WAVHeader(rate, pcm.Len))
	for _, p := range pcm.Parts {
		a.add(p)
	}
	return a
}

// MP3 renders u as MP3 frames of the tone covering its length (the MP3
// carries no silences, nor a Voice's speech: the fakes' MP3 is only ever
// checked for decoding and duration).
func (s *Studio) MP3(u Utterance) Audio {
	n := max(int(math.Ceil(u.Seconds/s.mp3Sec)), 1)
	var a Audio
	for i := range n {
		a.add(s.mp3[i%len(s.mp3)])
	}
	return a
}

// WAVHeader returns the 44-byte header of a 16-bit mono PCM WAV file
// holding dataLen bytes of samples at rate.
func WAVHeader(rate, dataLen int) []byte {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+dataLen))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(2*rate))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(dataLen))
	return h
}

func isSpace(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' && r != '\u00a0' {
			return false
		}
	}
	return true
}

// mp3Frames splits an MPEG-1 Layer III stream into frames and checks each
// one decodes on its own (main_data_begin 0). Hand-written: it reads only
// the two header fields our own embedded file uses, where a decoder
// library would not expose frame boundaries.
func mp3Frames(data []byte) ([][]byte, int, error) {
	// MPEG-1 Layer III bitrates (kbit/s) and sample rates by header index.
	bitrates := [16]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0}
	rates := [4]int{44100, 48000, 32000, 0}
	var out [][]byte
	rate := 0
	for len(data) > 0 {
		if len(data) < 6 || data[0] != 0xFF || data[1]&0xFE != 0xFA {
			return nil, 0, errors.New("not an MPEG-1 Layer III frame")
		}
		br := bitrates[data[2]>>4] * 1000
		sr := rates[(data[2]>>2)&3]
		if br == 0 || sr == 0 {
			return nil, 0, errors.New("free or bad bitrate or sample rate")
		}
		padding := int(data[2]>>1) & 1
		size := 144*br/sr + padding
		if size > len(data) {
			break // a trailing partial frame: drop it
		}
		side := 4
		if data[1]&1 == 0 {
			side += 2 // CRC
		}
		if mainDataBegin := int(data[side])<<1 | int(data[side+1]>>7); mainDataBegin != 0 {
			return nil, 0, fmt.Errorf("frame %d uses the bit reservoir", len(out))
		}
		out = append(out, data[:size])
		rate = sr
		data = data[size:]
	}
	if len(out) == 0 {
		return nil, 0, errors.New("no frames")
	}
	return out, rate, nil
}

// pcm returns the recording at rate as 16-bit little-endian PCM, by
// linear interpolation: a fake's resampler, good enough for speech that a
// test aligns, not for listening.
func (r *recording) pcm(rate int) Audio {
	n := int(math.Round(float64(len(r.samples)) * float64(rate) / float64(r.rate)))
	out := make([]byte, 2*n)
	step := float64(r.rate) / float64(rate)
	for i := range n {
		x := float64(i) * step
		k := int(x)
		v := float64(r.samples[min(k, len(r.samples)-1)])
		if k+1 < len(r.samples) {
			v += (x - float64(k)) * (float64(r.samples[k+1]) - v)
		}
		binary.LittleEndian.PutUint16(out[2*i:], uint16(int16(math.Round(v))))
	}
	var a Audio
	a.add(out)
	return a
}
