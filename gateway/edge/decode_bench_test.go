package edge

import (
	"testing"

	"github.com/voxgate/voxgate/gateway/edge/dialect"
)

// speechBody is a typical body of the speech endpoint; flatSpeechBody the
// commonest, which the flat decoder takes (flatjson.go).
var (
	speechBody     = []byte(`{"model":"openai/tts-1","voice":"alloy","text":"The quick brown fox jumps over the lazy dog, twice.","output":{"format":"pcm"}}`)
	flatSpeechBody = []byte(`{"model":"openai/tts-1","voice":"alloy","text":"The quick brown fox jumps over the lazy dog, twice."}`)
	// openAIBody is the OpenAI SDK's default request (decodeFlatOpenAI).
	openAIBody = []byte(`{"input":"The quick brown fox jumps over the lazy dog, twice.","model":"tts-1","voice":"alloy","response_format":"mp3"}`)
)

// BenchmarkDecodeSpeech is the decoding of a speech request's body, on the
// path of every synthesis request: JSON into the wire type, then the
// domain request.
func BenchmarkDecodeSpeech(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{{"output", speechBody}, {"flat", flatSpeechBody}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r speechRequestJSON
				if err := decodeHot(bc.body, &r); err != nil {
					b.Fatal(err)
				}
				if _, err := r.domain(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeOpenAISpeech is BenchmarkDecodeSpeech for the OpenAI
// SDK's default body, through the OpenAI dialect.
func BenchmarkDecodeOpenAISpeech(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var r dialect.OpenAISpeech
		if err := decodeHot(openAIBody, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeElevenLabsSpeech is BenchmarkDecodeSpeech for the
// ElevenLabs SDK's default body, through the ElevenLabs dialect.
func BenchmarkDecodeElevenLabsSpeech(b *testing.B) {
	body := []byte(`{"text":"The quick brown fox jumps over the lazy dog, twice.","model_id":"eleven_multilingual_v2"}`)
	b.ReportAllocs()
	for b.Loop() {
		var r dialect.ElevenLabsSpeech
		if err := decodeLenient(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}
