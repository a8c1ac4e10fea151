package harness

import (
	"encoding/binary"
	"path/filepath"
	"testing"
)

// Unmarked returns a clip without the provenance mark the gateway wrote
// into it (docs/provenance.md), for tests that compare the audio of two
// answers byte for byte (each answer's mark names its own request): a
// WAV file as its fmt and data chunks behind a 44-byte header, an MP3
// without a leading ID3v2 tag. Anything else is returned as it is.
func Unmarked(data []byte) []byte {
	switch {
	case len(data) >= 10 && string(data[:3]) == "ID3":
		n := int(data[6]&0x7f)<<21 | int(data[7]&0x7f)<<14 | int(data[8]&0x7f)<<7 | int(data[9]&0x7f)
		if 10+n <= len(data) {
			return data[10+n:]
		}
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		var fmtChunk []byte
		for off := 12; off+8 <= len(data); {
			size := int(binary.LittleEndian.Uint32(data[off+4:]))
			switch string(data[off : off+4]) {
			case "fmt ":
				fmtChunk = data[off : off+8+size]
			case "data":
				out := append([]byte(nil), data[:12]...)
				out = append(out, fmtChunk...)
				out = append(out, data[off:]...)
				if riff := binary.LittleEndian.Uint32(data[4:]); riff != 0 && riff != 0xFFFFFFFF {
					binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
				}
				return out
			}
			off += 8 + size + size&1
		}
	}
	return data
}

// ShareProvenanceKey returns cfg (which must not have a provenance
// section) with a provenance signing key file shared by every gateway
// started from it: instances on one store must sign with one key (the
// store records it and refuses another, docs/provenance.md), and each
// would otherwise make its own beside its own %DIR%.
func ShareProvenanceKey(t testing.TB, cfg string) string {
	return "provenance:\n  key_file: " + filepath.Join(t.TempDir(), "provenance.key") + "\n" + cfg
}
