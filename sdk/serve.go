package sdk

import (
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// MaxMessageBytes bounds one protocol message in either direction. gRPC's
// default receive limit (4 MiB) is below a few minutes of WAV or a set of
// cloning samples; this limit is not preallocated, it only caps what a
// peer may send.
const MaxMessageBytes = 128 << 20

// Serve serves p as a provider plugin and does not return until the gateway
// ends the plugin. Call it from main:
//
//	func main() { sdk.Serve(&myProvider{}) }
func Serve(p Provider) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{ProviderPluginName: &ProviderPlugin{Impl: p}},
		GRPCServer:      grpcServer,
	})
}

// ServeModerator serves m as a moderation plugin, like Serve.
func ServeModerator(m Moderator) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{ModeratorPluginName: &ModeratorPlugin{Impl: m}},
		GRPCServer:      grpcServer,
	})
}

// grpcServer is plugin.DefaultGRPCServer with message limits raised to
// MaxMessageBytes (requests carry cloning samples; responses whole clips)
// and clipCodec, which marshals whole clips without zeroing a 1 MiB pool
// buffer per response (about 3.5x less plugin memory at 256 concurrent
// clips, see BENCHMARKS.md).
func grpcServer(opts []grpc.ServerOption) *grpc.Server {
	return plugin.DefaultGRPCServer(append(opts,
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.ForceServerCodecV2(clipCodec{}),
	))
}
