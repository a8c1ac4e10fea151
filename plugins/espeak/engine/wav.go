package engine

import "encoding/binary"

// wavHeaderSize is the size of the canonical RIFF/WAVE header of 16-bit PCM.
const wavHeaderSize = 44

// wavUnknownSize is the RIFF and data chunk size written when the length is
// not known yet (a stream): the largest size the fields can hold, which
// readers treat as "until the end of the input".
const wavUnknownSize = 0xFFFFFFFF

// wavHeader returns the 44-byte header of a mono 16-bit PCM WAVE file at
// rate whose data chunk holds dataSize bytes (wavUnknownSize for a stream).
//
// Hand-written because it is 44 fixed bytes: WAVE encoders in Go libraries
// want an io.WriteSeeker to patch sizes afterwards, which neither a byte
// slice nor a stream is, and would be this plugin's only dependency besides
// the SDK.
func wavHeader(dataSize uint32, rate int) []byte {
	const channels, bitsPerSample = 1, 16
	const blockAlign = channels * bitsPerSample / 8
	riffSize := uint32(wavUnknownSize)
	if dataSize != wavUnknownSize {
		riffSize = wavHeaderSize - 8 + dataSize
	}
	h := make([]byte, 0, wavHeaderSize)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, riffSize)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16) // fmt chunk size
	h = binary.LittleEndian.AppendUint16(h, 1)  // WAVE_FORMAT_PCM
	h = binary.LittleEndian.AppendUint16(h, channels)
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*blockAlign)) // byte rate
	h = binary.LittleEndian.AppendUint16(h, blockAlign)
	h = binary.LittleEndian.AppendUint16(h, bitsPerSample)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, dataSize)
	return h
}
