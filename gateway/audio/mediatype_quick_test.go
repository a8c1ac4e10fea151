package audio

import (
	"mime"
	"testing"
)

// FuzzQuickMediaType holds quickMediaType to mime.ParseMediaType: what it
// takes, mime takes with the same type and parameters.
func FuzzQuickMediaType(f *testing.F) {
	for _, s := range []string{
		"audio/mpeg", "audio/pcm;rate=24000", "audio/pcm; rate=24000; channels=2", "audio/pcm;rate=24000;",
		"audio/pcm;rate=24000;rate=16000", "Audio/PCM;rate=24000", "audio/pcm;RATE=24000", "audio/pcm;rate=\"24000\"",
		"audio/pcm;\nrate=24000", "audio/pcm ;rate = 24000", " audio/wav ", "audio/", "/wav", "audio", "audio/pcm;;rate=1",
		"audio/pcm;a=1;b=2;c=3", "audio/l16;rate=8000", "audio/pcm;rate=24000\t", "text/plain;charset=utf-8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, params, ok := quickMediaType(s)
		if !ok {
			return
		}
		mtyp, mparams, err := mime.ParseMediaType(s)
		if err != nil {
			t.Fatalf("%q: quick took it as %q, mime refused: %v", s, typ, err)
		}
		if typ != mtyp || params.n != len(mparams) {
			t.Fatalf("%q: quick %q %d params, mime %q %v", s, typ, params.n, mtyp, mparams)
		}
		for i := range params.n {
			if mparams[params.names[i]] != params.vals[i] {
				t.Fatalf("%q: quick %s=%q, mime %v", s, params.names[i], params.vals[i], mparams)
			}
		}
	})
}

// TestQuickMediaTypeTakesTheCommonForms keeps the fast path taken for
// what providers and the gateway write.
func TestQuickMediaTypeTakesTheCommonForms(t *testing.T) {
	for _, s := range []string{"audio/mpeg", "audio/wav", "audio/pcm;rate=24000", "audio/pcm; rate=16000; channels=2", "audio/ogg"} {
		if _, _, ok := quickMediaType(s); !ok {
			t.Errorf("%q: declined", s)
		}
	}
	for _, s := range []string{"audio/pcm;rate=24000;", "Audio/Wav", "audio/pcm;rate=\"1\"", "audio/pcm;;rate=1", "audio/pcm;a=1;b=2;c=3"} {
		if _, _, ok := quickMediaType(s); ok {
			t.Errorf("%q: taken", s)
		}
	}
}
