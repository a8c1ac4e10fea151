package audio

import "time"

// meterHead is how much of a stream's start a Meter keeps to read its
// header: a WAV header with a few extra chunks, or the first MP3 frames
// after a modest ID3 tag.
const meterHead = 4 << 10

// Meter tells the playing time of encoded audio as it passes by, for the
// request log and usage (audio seconds), without decoding it: raw PCM
// from its byte count and rate, WAV from its header and data length, MP3
// from the first frame's bitrate (exact for constant bitrate, which is
// what the gateway's encoder and most providers send; an estimate for
// variable bitrate), G.711 from its byte count. Other formats measure 0.
//
// Hot path (every streamed chunk): Write adds to a counter and copies
// only the first few KiB of a stream.
type Meter struct {
	mt    MediaType
	known bool
	head  []byte
	n     int64
}

// NewMeter returns a Meter for audio of mediaType.
func NewMeter(mediaType string) Meter {
	mt, err := ParseMediaType(mediaType)
	return Meter{mt: mt, known: err == nil}
}

// Write counts p as the next bytes of the audio.
func (m *Meter) Write(p []byte) {
	if !m.known {
		return
	}
	m.n += int64(len(p))
	if (m.mt.Format == FormatWAV || m.mt.Format == FormatMP3) && len(m.head) < meterHead {
		m.head = append(m.head, p[:min(len(p), meterHead-len(m.head))]...)
	}
}

// Length returns the playing time of what was written, 0 when unknown.
func (m *Meter) Length() time.Duration {
	if !m.known || m.n == 0 {
		return 0
	}
	switch m.mt.Format {
	case FormatPCM:
		return bytesTime(m.n, int64(2*max(m.mt.Channels, 1)), m.mt.Rate)
	case FormatULaw, FormatALaw:
		return bytesTime(m.n, int64(max(m.mt.Channels, 1)), m.mt.Rate)
	case FormatWAV:
		f, pcm, err := parseWAV(m.head)
		if err != nil || f.blockAlign <= 0 || f.rate <= 0 {
			return 0
		}
		data := m.n - int64(len(m.head)-len(pcm))
		return bytesTime(data, int64(f.blockAlign), f.rate)
	case FormatMP3:
		s, err := probeMP3(m.head)
		if err != nil || s.first.kbps <= 0 {
			return 0
		}
		// Audio frames only: not an ID3 tag or a Xing/Info tag frame,
		// and not the encoder's delay and padding when a LAME tag says.
		n := m.n - int64(skipID3v2(m.head))
		if s.tag {
			n -= int64(s.first.size)
		}
		d := time.Duration(float64(n) * 8 / float64(s.first.kbps*1000) * float64(time.Second))
		if s.delay >= 0 && s.padding >= 0 && s.first.rate > 0 {
			d -= time.Duration(int64(s.delay+s.padding) * int64(time.Second) / int64(s.first.rate))
		}
		return max(d, 0)
	}
	return 0
}

// Length returns the playing time of a whole clip (see Meter).
func Length(data []byte, mediaType string) time.Duration {
	m := NewMeter(mediaType)
	m.Write(data)
	return m.Length()
}

func bytesTime(n, frameBytes int64, rate int) time.Duration {
	if n <= 0 || frameBytes <= 0 || rate <= 0 {
		return 0
	}
	frames := n / frameBytes
	return time.Duration(frames * int64(time.Second) / int64(rate))
}
