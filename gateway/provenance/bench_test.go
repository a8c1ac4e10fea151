package provenance

import (
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkInsert is the cost of marking one answer (per container):
// paid on the request path, once per clip or stream.
func BenchmarkInsert(b *testing.B) {
	m := testMark()
	for _, tc := range []struct{ format, ext string }{{"mp3", "mp3"}, {"wav", "wav"}, {"flac", "flac"}, {"opus", "opus"}} {
		b.Run(tc.format, func(b *testing.B) {
			t := &testing.T{}
			in := ffmpegClip(t, tc.ext)
			if in == nil {
				b.Skip("ffmpeg")
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := Insert(in, tc.format, m, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSignRecord is the cost of signing one answer's record, paid
// where its log row is recorded, after the answer was written.
func BenchmarkSignRecord(b *testing.B) {
	s, err := NewSigner(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	m := testMark()
	r := &Record{RequestID: "0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e", OrgID: "acme", Gateway: "gw", Provider: "openai",
		Model: "gpt-4o-mini-tts", VoiceID: "alloy", Time: time.Now(), MediaType: "audio/mpeg",
		SHA256: "93b9a5b08b0c5f47b6098e09bd7f87c4ded305ab1e3961446f36f5a4c70b190a", Bytes: 48000, Complete: true,
		Marked: MarkedID3, Mark: m}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.SignRecord(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordJSON is the record's JSON: by hand (marshalRecord, what
// SignRecord uses) against encoding/json, which writes the same bytes.
func BenchmarkRecordJSON(b *testing.B) {
	r := &Record{Version: RecordVersion, RequestID: "0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e", OrgID: "acme", Gateway: "gw",
		Provider: "openai", Model: "gpt-4o-mini-tts", VoiceID: "alloy", Time: time.Now(), MediaType: "audio/mpeg",
		SHA256: "93b9a5b08b0c5f47b6098e09bd7f87c4ded305ab1e3961446f36f5a4c70b190a", Bytes: 48000, Complete: true,
		DigitalSourceType: DigitalSourceType, Marked: MarkedID3, Mark: testMark()}
	for _, bc := range []struct {
		name string
		enc  func(*Record) ([]byte, error)
	}{
		{"hand", marshalRecord},
		{"encoding-json", func(r *Record) ([]byte, error) { return json.Marshal(r) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.enc(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHasher is the hashing of a stream's pieces as they are
// written (16 KiB pieces).
func BenchmarkHasher(b *testing.B) {
	h := NewHasher()
	p := make([]byte, 16<<10)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		h.Write(p)
	}
}
