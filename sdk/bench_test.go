package sdk_test

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// benchText is 64 words: 64 chunks of about 10 KB when streamed.
var benchText = strings.Repeat("streaming speech chunk ", 21) + "end"

// BenchmarkStream measures the streaming hot path end to end through a
// real plugin process: plugin adapter, gRPC over the go-plugin socket with
// mTLS, host adapter. allocs/op counts the host side only (the plugin is
// another process). The plugin renders silence, so that the figure is the
// wire's cost and not the cost of computing sine waves.
func BenchmarkStream(b *testing.B) {
	p := sdktest.StartPlugin(b, testPlugin)
	req := &sdk.SynthesizeRequest{Model: "test", Voice: "alpha", Text: benchText, Options: []byte(`{"silent": true}`)}
	var total int
	if err := p.Stream(b.Context(), req, func(c sdk.Chunk) error { total += len(c.Data); return nil }); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Stream(b.Context(), req, func(sdk.Chunk) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSynthesize is the whole-clip path for the same text.
func BenchmarkSynthesize(b *testing.B) {
	p := sdktest.StartPlugin(b, testPlugin)
	req := &sdk.SynthesizeRequest{Model: "test", Voice: "alpha", Text: benchText, Options: []byte(`{"silent": true}`)}
	resp, err := p.Synthesize(b.Context(), req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(resp.Audio)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Synthesize(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
