package postgres

import (
	"encoding/binary"
	"fmt"

	"github.com/voxgate/voxgate/gateway/store"
)

// List positions. A voice position is 'v', created_ns (8 bytes, big
// endian), then the voice id; a log position is 'l', ts then seq (8 bytes
// each). The leading byte keeps a position of one list from being read as
// one of the other.

func encodeVoicePosition(createdNS int64, id string) store.Position {
	b := make([]byte, 0, 9+len(id))
	b = append(b, 'v')
	b = binary.BigEndian.AppendUint64(b, uint64(createdNS))
	return append(b, id...)
}

func decodeVoicePosition(p store.Position) (int64, string, error) {
	if len(p) < 10 || p[0] != 'v' {
		return 0, "", store.ErrInvalidPosition
	}
	return int64(binary.BigEndian.Uint64(p[1:9])), string(p[9:]), nil
}

func encodeLogPosition(ts, seq int64) store.Position {
	b := make([]byte, 0, 17)
	b = append(b, 'l')
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	return binary.BigEndian.AppendUint64(b, uint64(seq))
}

func decodeLogPosition(p store.Position) (ts, seq int64, err error) {
	if len(p) != 17 || p[0] != 'l' {
		return 0, 0, fmt.Errorf("%w: %d bytes", store.ErrInvalidPosition, len(p))
	}
	return int64(binary.BigEndian.Uint64(p[1:9])), int64(binary.BigEndian.Uint64(p[9:])), nil
}
