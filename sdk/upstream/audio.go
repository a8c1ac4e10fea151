package upstream

import (
	"encoding/binary"
	"fmt"
	"math"
	"mime"
	"mime/multipart"
	"net/textproto"
	"path"
	"strconv"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// StreamingWAV is the data length WAVHeader takes for a stream whose
// length is not known up front; readers then take the data to run to the
// end of the file.
const StreamingWAV = math.MaxUint32

// WAVHeader returns the 44-byte RIFF/WAVE header of 16-bit little-endian
// mono PCM at rate followed by dataLen bytes of samples (StreamingWAV when
// unknown). Providers that produce raw PCM use it to answer wav.
func WAVHeader(rate int, dataLen uint32) []byte {
	riffLen := dataLen
	if dataLen != StreamingWAV {
		riffLen = 36 + dataLen
	}
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], riffLen)
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(2*rate))
	binary.LittleEndian.PutUint16(h[32:], 2)  // block align
	binary.LittleEndian.PutUint16(h[34:], 16) // bits per sample
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], dataLen)
	return h
}

// SampleFile prepares a cloning sample for upload as a file: raw PCM
// ("audio/pcm;rate=N") becomes a WAV file, since cloning endpoints take
// audio files, not headerless samples; anything else is sent as is. The
// filename is the sample's own or "sample-<i+1>.<ext>" from its type.
func SampleFile(s sdk.Sample, i int) (filename, mediaType string, data []byte) {
	filename, mediaType, data = s.Filename, s.MediaType, s.Data
	mt, params, err := mime.ParseMediaType(s.MediaType)
	ext := "bin"
	if err == nil {
		switch mt {
		case "audio/pcm", "audio/l16":
			if rate, rerr := strconv.Atoi(params["rate"]); rerr == nil && rate > 0 && mt == "audio/pcm" {
				data = append(WAVHeader(rate, uint32(len(s.Data))), s.Data...)
				mediaType, ext = "audio/wav", "wav"
				if filename != "" {
					filename = strings.TrimSuffix(filename, path.Ext(filename)) + ".wav"
				}
			}
		case "audio/wav", "audio/x-wav", "audio/wave":
			ext = "wav"
		case "audio/mpeg", "audio/mp3":
			ext = "mp3"
		case "audio/flac":
			ext = "flac"
		case "audio/ogg":
			ext = "ogg"
		case "audio/webm":
			ext = "webm"
		}
	}
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	if filename == "" {
		filename = fmt.Sprintf("sample-%d.%s", i+1, ext)
	}
	return filename, mediaType, data
}

// WriteSample adds cloning sample i to a multipart form as a file part
// named field, prepared by SampleFile.
func WriteSample(mw *multipart.Writer, field string, s sdk.Sample, i int) error {
	filename, mediaType, data := SampleFile(s, i)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, field, filename))
	h.Set("Content-Type", mediaType)
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	_, err = part.Write(data)
	return err
}
