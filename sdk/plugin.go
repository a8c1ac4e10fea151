package sdk

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// Handshake is the go-plugin handshake shared by the gateway and every
// plugin. A binary started without the magic cookie in its environment
// (someone ran it from a shell) refuses to serve and says so. Treat it as a
// constant; ProtocolVersion changes only with an incompatible protocol.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "VOXGATE_PLUGIN",
	MagicCookieValue: "9c0e4f3a-voxgate-plugin-v1",
}

// Names under which a plugin process offers its service; the host dispenses
// one of them.
const (
	// ProviderPluginName is the plugin name of a Provider.
	ProviderPluginName = "provider"
	// ModeratorPluginName is the plugin name of a Moderator.
	ModeratorPluginName = "moderator"
)

// PluginSet returns the plugins a host can dispense, with no
// implementations: the host side only needs their GRPCClient methods.
func PluginSet() plugin.PluginSet {
	return plugin.PluginSet{
		ProviderPluginName:  &ProviderPlugin{},
		ModeratorPluginName: &ModeratorPlugin{},
	}
}

// ProviderPlugin is the go-plugin glue for a Provider. On the plugin side
// Impl is the implementation to serve; on the host side Impl is unused and
// GRPCClient returns a Provider that calls the plugin process.
type ProviderPlugin struct {
	// NetRPCUnsupportedPlugin rejects go-plugin's legacy net/rpc protocol;
	// voxgate plugins speak gRPC only.
	plugin.NetRPCUnsupportedPlugin
	// Impl is the plugin author's Provider.
	Impl Provider
}

var _ plugin.GRPCPlugin = (*ProviderPlugin)(nil)

// GRPCServer registers the Provider service backed by p.Impl.
func (p *ProviderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterProviderServer(s, &grpcProviderServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a Provider (host-side adapter) that calls the plugin
// over conn.
func (p *ProviderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &grpcProviderClient{rpc: pluginpb.NewProviderClient(conn)}, nil
}

// ModeratorPlugin is the go-plugin glue for a Moderator, like
// ProviderPlugin.
type ModeratorPlugin struct {
	// NetRPCUnsupportedPlugin rejects go-plugin's legacy net/rpc protocol.
	plugin.NetRPCUnsupportedPlugin
	// Impl is the plugin author's Moderator.
	Impl Moderator
}

var _ plugin.GRPCPlugin = (*ModeratorPlugin)(nil)

// GRPCServer registers the Moderator service backed by p.Impl.
func (p *ModeratorPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterModeratorServer(s, &grpcModeratorServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a Moderator (host-side adapter) that calls the plugin
// over conn.
func (p *ModeratorPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &grpcModeratorClient{rpc: pluginpb.NewModeratorClient(conn)}, nil
}
