package edge

import "testing"

// speechBody is a typical body of the speech endpoint.
var speechBody = []byte(`{"model":"openai/tts-1","voice":"alloy","text":"The quick brown fox jumps over the lazy dog, twice.","output":{"format":"pcm"}}`)

// BenchmarkDecodeSpeech is the decoding of a speech request's body, on the
// path of every synthesis request: JSON into the wire type, then the
// domain request.
func BenchmarkDecodeSpeech(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var r speechRequestJSON
		if err := decodeHot(speechBody, &r); err != nil {
			b.Fatal(err)
		}
		if _, err := r.domain(); err != nil {
			b.Fatal(err)
		}
	}
}
