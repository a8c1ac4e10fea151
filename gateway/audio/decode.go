package audio

import (
	"fmt"
)

// Decode decodes a whole clip of the given media type (see ParseMediaType)
// to mono float samples. Multi-channel audio is mixed down by averaging.
// Errors wrap ErrUnsupportedMediaType or ErrCorrupt.
func Decode(data []byte, mediaType string) (*Clip, error) {
	m, err := ParseMediaType(mediaType)
	if err != nil {
		return nil, err
	}
	return decodeAs(data, m)
}

func decodeAs(data []byte, m MediaType) (*Clip, error) {
	switch m.Format {
	case FormatWAV:
		return decodeWAV(data)
	case FormatMP3:
		return decodeMP3(data)
	case FormatPCM:
		return decodePCM(data, m), nil
	case FormatULaw, FormatALaw:
		return decodeG711(data, m), nil
	}
	return nil, fmt.Errorf("%w: format %q", ErrUnsupportedMediaType, m.Format)
}

// decodePCM decodes raw 16-bit PCM. An incomplete trailing frame (a stream
// cut mid-sample) is dropped rather than failing the whole clip.
func decodePCM(data []byte, m MediaType) *Clip {
	frame := 2 * m.Channels
	out := make([]float32, len(data)/frame)
	s16le(out, data, m.Channels, frame, m.BigEndian)
	return &Clip{Rate: m.Rate, Samples: out}
}
