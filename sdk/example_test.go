package sdk_test

import (
	"context"
	"strconv"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// Silence is a complete, if quiet, provider plugin: a tenth of a second of
// silence per word. UnimplementedProvider answers Configure, Voices, Stream
// and Clone.
type Silence struct {
	sdk.UnimplementedProvider
}

// Describe names the provider and its one model.
func (Silence) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{
		ID:           "silence",
		Name:         "Silence",
		DefaultModel: "quiet",
		Models:       []sdk.Model{{ID: "quiet", OutputFormats: []string{sdk.FormatPCM}, NativeSampleRate: 8000}},
	}, nil
}

// Synthesize returns the silence, rejecting any voice but the default.
func (Silence) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Voice != "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "unknown voice %q", req.Voice)
	}
	words := len(strings.Fields(req.Text))
	return &sdk.SynthesizeResponse{
		Audio:     make([]byte, words*800*2), // 800 samples of 16-bit silence per word
		MediaType: "audio/pcm;rate=" + strconv.Itoa(8000),
	}, nil
}

// A plugin's main function hands its Provider to Serve; the gateway starts
// the binary and talks to it over gRPC. (Not run here: Serve takes over the
// process.)
func ExampleServe() {
	sdk.Serve(Silence{})
}
