package pluginhost

import (
	"context"

	"github.com/voxgate/voxgate/sdk"
)

var _ sdk.InputStreamer = (*Pool)(nil)

// StreamInput implements sdk.InputStreamer on an instance, like Stream:
// only meaningful when the plugin's models claim InputStreaming. The
// instance counts the stream as in flight for its whole life, so new
// calls prefer less busy instances.
func (p *Pool) StreamInput(ctx context.Context, req *sdk.SynthesizeRequest, in <-chan sdk.TextInput, send func(sdk.StreamEvent) error) error {
	return p.do(ctx, func(in2 *instance) error {
		is, ok := in2.prov().(sdk.InputStreamer)
		if !ok {
			return sdk.Errorf(sdk.KindUnsupported, "plugin %s does not take input streams", p.spec.Name)
		}
		return is.StreamInput(ctx, req, in, send)
	})
}
