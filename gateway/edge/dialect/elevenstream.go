package dialect

import (
	"encoding/base64"
	"encoding/json"
)

// TimestampChunkSeconds is about how much audio each object of
// /stream/with-timestamps carries. ElevenLabs sends an object per piece
// of audio as its model produces it; the gateway has the timed clip
// whole (providers' streams carry no timings) and cuts it into pieces of
// this length so that a client reading the stream sees the shape it
// would see from ElevenLabs: several objects, each with its audio and
// the characters that start in it.
const TimestampChunkSeconds = 0.5

// TimestampChunk is one object of ElevenLabs' /stream/with-timestamps
// (StreamingAudioChunkWithTimestampsResponseModel): a piece of the
// clip in base64 and the alignment of the characters that start within
// it, their times counted from the clip's start; null when no character
// starts in the piece.
type TimestampChunk struct {
	AudioBase64         string     `json:"audio_base64"`
	Alignment           *Alignment `json:"alignment"`
	NormalizedAlignment *Alignment `json:"normalized_alignment"`
}

// AppendTimestampChunks appends clip, seconds long, as ElevenLabs'
// /stream/with-timestamps sends it: JSON objects (TimestampChunk), each
// ended by a newline, which is how its SDKs split the stream. The clip
// is cut every TimestampChunkSeconds at a multiple of frame bytes (a
// PCM sample, so a client decoding piece by piece never gets half a
// sample; 1 for compressed formats, whose decoders take the pieces
// joined). Each character of a goes with the piece its start falls in,
// the last piece taking any that start after the clip's measured end.
func AppendTimestampChunks(dst, clip []byte, seconds float64, frame int, a *Alignment) []byte {
	frame = max(frame, 1)
	size := len(clip)
	if seconds > TimestampChunkSeconds {
		size = int(float64(len(clip)) * TimestampChunkSeconds / seconds)
		size = max(size/frame*frame, frame)
	}
	var n int // characters of a already sent
	for off := 0; off < len(clip) || off == 0; off += size {
		end := min(off+size, len(clip))
		last := end == len(clip)
		until := float64(end) / float64(max(len(clip), 1)) * seconds
		c := TimestampChunk{AudioBase64: base64.StdEncoding.EncodeToString(clip[off:end])}
		if a != nil {
			from := n
			for n < len(a.Characters) && (last || a.Starts[n] < until) {
				n++
			}
			if n > from {
				part := &Alignment{Characters: a.Characters[from:n], Starts: a.Starts[from:n], Ends: a.Ends[from:n]}
				c.Alignment, c.NormalizedAlignment = part, part
			}
		}
		b, _ := json.Marshal(c) // strings, numbers and slices: cannot fail
		dst = append(append(dst, b...), '\n')
		if last {
			break
		}
	}
	return dst
}
