package audio

import (
	"bytes"
	"math"
	"testing"
	"testing/iotest"
)

// TestMeasureEncoded: measuring an encoded file read a few bytes at a
// time gives what decoding it whole and measuring the clip gives (the
// measurement EncodeLoudness makes of a clip's answer).
func TestMeasureEncoded(t *testing.T) {
	const rate = 24000
	clip := &Clip{Rate: rate, Samples: longSignal(rate)}
	for _, format := range []string{FormatMP3, FormatOpus} {
		t.Run(format, func(t *testing.T) {
			b, _, err := Encode(clip, Output{Format: format})
			if err != nil {
				t.Fatal(err)
			}
			var whole *Clip
			if format == FormatMP3 {
				whole, err = decodeMP3(b)
			} else {
				whole, err = decodeOwn(b, Output{Format: format})
			}
			if err != nil {
				t.Fatal(err)
			}
			wantI, wantTP, err := MeasureLoudness(whole)
			if err != nil {
				t.Fatal(err)
			}
			// iotest.HalfReader: pages and frames arrive split.
			gotI, gotTP, err := MeasureEncoded(iotest.HalfReader(bytes.NewReader(b)), format)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %.3f LUFS %.3f dBTP streamed, %.3f LUFS %.3f dBTP whole", format, gotI, gotTP, wantI, wantTP)
			if math.Abs(gotI-wantI) > 0.02 || math.Abs(gotTP-wantTP) > 0.05 {
				t.Errorf("streamed %.3f LUFS %.3f dBTP, whole %.3f LUFS %.3f dBTP", gotI, gotTP, wantI, wantTP)
			}
		})
	}
	if _, _, err := MeasureEncoded(bytes.NewReader([]byte("not audio at all")), FormatOpus); err == nil {
		t.Error("garbage measured as Opus")
	}
	if _, _, err := MeasureEncoded(bytes.NewReader(nil), FormatWAV); err == nil {
		t.Error("WAV measured (it has no measuring decoder here)")
	}
}
