package audio

import (
	"bytes"
	"errors"
	"testing"
)

func TestWrapPCM(t *testing.T) {
	pcm := []byte{1, 0, 2, 0, 0xff, 0x7f, 9} // three samples and a stray byte
	wav, mt, err := WrapPCM(pcm, "audio/pcm;rate=24000")
	if err != nil || mt != "audio/wav" || len(wav) != wavHeaderLen+6 || !bytes.Equal(wav[wavHeaderLen:], pcm[:6]) {
		t.Fatalf("WrapPCM = %d bytes, %q, %v", len(wav), mt, err)
	}
	c, err := Decode(wav, mt)
	if err != nil || c.Rate != 24000 || len(c.Samples) != 3 {
		t.Fatalf("decoded %+v, %v", c, err)
	}
	for _, bad := range []string{"audio/wav", "audio/pcm", "audio/L16;rate=8000", "audio/pcm;rate=8000;channels=2", "text/plain"} {
		if _, _, err := WrapPCM(pcm, bad); !errors.Is(err, ErrUnsupportedMediaType) {
			t.Errorf("WrapPCM(%q): %v", bad, err)
		}
	}
}
