package sdk

import (
	"testing"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// split cuts b into a BufferSlice of pieces of at most n bytes, the way
// gRPC hands a message spread over HTTP/2 frames to a codec.
func split(b []byte, n int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		s = append(s, mem.SliceBuffer(append([]byte(nil), b[:k]...)))
		b = b[k:]
	}
	return s
}

func TestClipCodecDecodesLikeProto(t *testing.T) {
	audio := make([]byte, 100_000)
	for i := range audio {
		audio[i] = byte(i)
	}
	full := &pluginpb.SynthesizeResponse{
		Audio:      audio,
		MediaType:  "audio/pcm;rate=24000",
		Timestamps: []*pluginpb.WordTimestamp{{Text: "hello", Start: 0.1, End: 0.4}, {Text: "world", Start: 0.5, End: 0.9}},
		Warnings:   []string{"w1"},
	}
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Two messages back to back are one message by protobuf's merge rule:
	// the last audio wins, repeated fields append.
	merged := append(enc(full), enc(&pluginpb.SynthesizeResponse{Audio: []byte("second"), Warnings: []string{"w2"}})...)
	tests := []struct {
		name string
		wire []byte
	}{
		{"full", enc(full)},
		{"no audio", enc(&pluginpb.SynthesizeResponse{MediaType: "audio/wav"})},
		{"empty", nil},
		{"merged", merged},
	}
	for _, tt := range tests {
		for _, piece := range []int{16 << 10, 7, 1 << 20} {
			want := &pluginpb.SynthesizeResponse{}
			if err := proto.Unmarshal(tt.wire, want); err != nil {
				t.Fatal(err)
			}
			got := &pluginpb.SynthesizeResponse{MediaType: "stale"}
			if err := (clipCodec{}).Unmarshal(split(tt.wire, piece), got); err != nil {
				t.Fatalf("%s/%d: %v", tt.name, piece, err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("%s/%d: decoded %v, want %v", tt.name, piece, got.MediaType, want.MediaType)
			}
		}
	}
}

func TestClipCodecRejectsMalformed(t *testing.T) {
	b, _ := proto.Marshal(&pluginpb.SynthesizeResponse{Audio: make([]byte, 1000), MediaType: "audio/wav"})
	for _, cut := range []int{1, 5, len(b) - 1} {
		if err := (clipCodec{}).Unmarshal(split(b[:cut], 1<<20), &pluginpb.SynthesizeResponse{}); err == nil {
			t.Errorf("truncated at %d of %d bytes: no error", cut, len(b))
		}
	}
}

func TestClipCodecOtherMessages(t *testing.T) {
	b, _ := proto.Marshal(&pluginpb.Chunk{MediaType: "audio/pcm", Data: []byte("abc")})
	var c pluginpb.Chunk
	if err := (clipCodec{}).Unmarshal(split(b, 2), &c); err != nil || c.MediaType != "audio/pcm" || string(c.Data) != "abc" {
		t.Fatalf("chunk = %v, %v", &c, err)
	}
	out, err := (clipCodec{}).Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	if string(out.Materialize()) != string(b) {
		t.Error("Marshal differs from proto.Marshal")
	}
}

func TestClipCodecMarshalsLikeProto(t *testing.T) {
	// Large messages come from a pool that does not zero; marshal a big
	// one, free it, then smaller ones that reuse its buffer.
	for _, n := range []int{300_000, 200_000, 70_000, 20_000, 0} {
		m := &pluginpb.SynthesizeResponse{Audio: make([]byte, n), MediaType: "audio/pcm;rate=24000", Warnings: []string{"w"}}
		for i := range m.Audio {
			m.Audio[i] = byte(i + n)
		}
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := (clipCodec{}).Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Materialize()) != string(want) {
			t.Errorf("%d bytes of audio: Marshal differs from proto.Marshal", n)
		}
		got.Free()
	}
}

func TestTieredPool(t *testing.T) {
	p := newTieredPool(16, 20)
	tests := []struct{ n, cap int }{
		{1, 1 << 16}, {1 << 16, 1 << 16}, {1<<16 + 1, 1 << 17}, {150_000, 1 << 18}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1},
	}
	for _, tt := range tests {
		b := p.Get(tt.n)
		if len(*b) != tt.n || cap(*b) != tt.cap {
			t.Errorf("Get(%d): len %d cap %d, want cap %d", tt.n, len(*b), cap(*b), tt.cap)
		}
		p.Put(b)
	}
	odd := make([]byte, 100_000) // not a tier size: dropped, never handed out
	p.Put(&odd)
	if b := p.Get(70_000); cap(*b) != 1<<17 {
		t.Errorf("Get after Put of an odd size: cap %d", cap(*b))
	}
}

// BenchmarkClipCodec compares the standard protobuf codec with clipCodec
// on a 3-second 24 kHz PCM clip (144 KB) arriving in 16 KiB HTTP/2 frames,
// both ways: the host decoding a SynthesizeResponse, a plugin encoding it.
func BenchmarkClipCodec(b *testing.B) {
	m := &pluginpb.SynthesizeResponse{Audio: make([]byte, 144_000), MediaType: "audio/pcm;rate=24000"}
	wire, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	frames := split(wire, 16<<10)
	codecs := []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
			Unmarshal(mem.BufferSlice, any) error
		}
	}{
		{"standard", encoding.GetCodecV2(grpcproto.Name)},
		{"clip", clipCodec{}},
	}
	for _, c := range codecs {
		b.Run("unmarshal/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				var out pluginpb.SynthesizeResponse
				if err := c.codec.Unmarshal(frames, &out); err != nil || len(out.Audio) != 144_000 {
					b.Fatal(err)
				}
			}
		})
		b.Run("marshal/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				out, err := c.codec.Marshal(m)
				if err != nil {
					b.Fatal(err)
				}
				out.Free()
			}
		})
	}
}
