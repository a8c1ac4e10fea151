package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxWAVHeader bounds the chunks read before a WAV's data chunk: a fmt
// chunk and perhaps a LIST chunk of metadata, never more than a few KB.
const maxWAVHeader = 64 << 10

// wavFormat is what the fmt chunk says.
type wavFormat struct {
	tag, channels, bits, rate int
}

// check reports whether the format is 16-bit mono PCM at rate, the only
// layout the plugin asks for (precision PCM_16) and the gateway's pcm.
func (f wavFormat) check(rate int) error {
	switch {
	case f.tag != 1 || f.bits != 16 || f.channels != 1:
		return fmt.Errorf("the WAV is not 16-bit mono PCM (format %d, %d bits, %d channels)", f.tag, f.bits, f.channels)
	case f.rate != rate:
		return fmt.Errorf("the WAV is at %d Hz, not the %d Hz asked for", f.rate, rate)
	}
	return nil
}

func parseFmt(body []byte) (wavFormat, error) {
	if len(body) < 16 {
		return wavFormat{}, errors.New("the WAV's fmt chunk is too short")
	}
	return wavFormat{
		tag:      int(binary.LittleEndian.Uint16(body[0:2])),
		channels: int(binary.LittleEndian.Uint16(body[2:4])),
		rate:     int(binary.LittleEndian.Uint32(body[4:8])),
		bits:     int(binary.LittleEndian.Uint16(body[14:16])),
	}, nil
}

// pcmOfWAV returns the samples of a whole 16-bit mono WAV file at rate:
// the data chunk, which runs to the end of the file when its size says
// "unknown" (0 or 0xFFFFFFFF) or more than the file holds.
func pcmOfWAV(b []byte, rate int) ([]byte, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, errors.New("the audio is not a WAV file")
	}
	var (
		f      wavFormat
		gotFmt bool
	)
	rest := b[12:]
	for len(rest) >= 8 {
		id, size := string(rest[0:4]), int(binary.LittleEndian.Uint32(rest[4:8]))
		body := rest[8:]
		if id == "data" {
			if !gotFmt {
				return nil, errors.New("the WAV has no fmt chunk before its data")
			}
			if err := f.check(rate); err != nil {
				return nil, err
			}
			if size == 0 || size == 0xFFFFFFFF || size > len(body) {
				size = len(body)
			}
			return body[:size], nil
		}
		if size > len(body) {
			return nil, fmt.Errorf("the WAV's %q chunk is cut short", id)
		}
		if id == "fmt " {
			var err error
			if f, err = parseFmt(body[:size]); err != nil {
				return nil, err
			}
			gotFmt = true
		}
		size += size & 1 // chunks are padded to an even length
		rest = body[min(size, len(body)):]
	}
	return nil, errors.New("the WAV has no data chunk")
}

// skipWAVHeader reads a streamed WAV's header from r, up to and including
// the data chunk's header, checks its format, and leaves r at the first
// sample. A streamed WAV does not know its length, so the data chunk's
// size is not trusted: the samples run to the end of the stream.
func skipWAVHeader(r *bufio.Reader, rate int) error {
	var riff [12]byte
	if _, err := io.ReadFull(r, riff[:]); err != nil {
		return fmt.Errorf("reading the WAV header: %w", err)
	}
	if string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return errors.New("the stream is not a WAV")
	}
	var (
		f      wavFormat
		gotFmt bool
		read   = 12
	)
	for read < maxWAVHeader {
		var h [8]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return fmt.Errorf("reading the WAV header: %w", err)
		}
		read += 8
		id, size := string(h[0:4]), int(binary.LittleEndian.Uint32(h[4:8]))
		if id == "data" {
			if !gotFmt {
				return errors.New("the WAV has no fmt chunk before its data")
			}
			return f.check(rate)
		}
		size += size & 1
		if read+size > maxWAVHeader {
			break
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("reading the WAV header: %w", err)
		}
		read += size
		if id == "fmt " {
			var err error
			if f, err = parseFmt(body); err != nil {
				return err
			}
			gotFmt = true
		}
	}
	return fmt.Errorf("the WAV header exceeds %d bytes", maxWAVHeader)
}
