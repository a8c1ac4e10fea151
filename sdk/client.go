package sdk

import (
	"fmt"
	"os/exec"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// This file is the host side: what the gateway (and sdktest) use to start a
// plugin process and get a Provider or Moderator out of it.

// ClientConfig returns the go-plugin client configuration for the plugin
// that cmd starts: voxgate's handshake and plugin set, gRPC only, AutoMTLS,
// and message limits matching the plugin side. Callers add what is theirs
// (Logger, StartTimeout, Stderr) before plugin.NewClient.
func ClientConfig(cmd *exec.Cmd) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          PluginSet(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions: []grpc.DialOption{
			grpc.WithDefaultCallOptions(
				grpc.MaxCallRecvMsgSize(MaxMessageBytes),
				grpc.MaxCallSendMsgSize(MaxMessageBytes),
			),
		},
	}
}

// DispenseProvider starts (if needed) the plugin process of c and returns
// its Provider. The Provider stays usable until c is killed; after the
// process dies its calls fail with KindUnavailable.
func DispenseProvider(c *plugin.Client) (Provider, error) {
	raw, err := dispense(c, ProviderPluginName)
	if err != nil {
		return nil, err
	}
	p, ok := raw.(Provider)
	if !ok {
		return nil, fmt.Errorf("plugin %q dispensed %T, not a Provider", ProviderPluginName, raw)
	}
	return p, nil
}

// DispenseModerator starts (if needed) the plugin process of c and returns
// its Moderator, like DispenseProvider.
func DispenseModerator(c *plugin.Client) (Moderator, error) {
	raw, err := dispense(c, ModeratorPluginName)
	if err != nil {
		return nil, err
	}
	m, ok := raw.(Moderator)
	if !ok {
		return nil, fmt.Errorf("plugin %q dispensed %T, not a Moderator", ModeratorPluginName, raw)
	}
	return m, nil
}

func dispense(c *plugin.Client, name string) (any, error) {
	rpc, err := c.Client()
	if err != nil {
		return nil, fmt.Errorf("start plugin: %w", err)
	}
	raw, err := rpc.Dispense(name)
	if err != nil {
		return nil, fmt.Errorf("dispense %s plugin: %w", name, err)
	}
	return raw, nil
}
