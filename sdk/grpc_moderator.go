package sdk

import (
	"context"

	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// grpcModeratorClient is the host side of a moderation plugin: a Moderator
// whose methods are gRPC calls to the plugin process.
type grpcModeratorClient struct {
	rpc pluginpb.ModeratorClient
}

var _ Moderator = (*grpcModeratorClient)(nil)

// Configure implements Moderator.
func (c *grpcModeratorClient) Configure(ctx context.Context, settings map[string]string) error {
	_, err := c.rpc.Configure(ctx, &pluginpb.ConfigureRequest{Settings: settings})
	return errorFromRPC(ctx, "Configure", err)
}

// Moderate implements Moderator.
func (c *grpcModeratorClient) Moderate(ctx context.Context, req *ModerationRequest) (*ModerationResult, error) {
	resp, err := c.rpc.Moderate(ctx, &pluginpb.ModerationRequest{
		Text:        req.Text,
		Credentials: credentialsToProto(req.Credentials),
		Rules:       moderationRulesToProto(req.Rules),
	})
	if err != nil {
		return nil, errorFromRPC(ctx, "Moderate", err)
	}
	return moderationResultFromProto(resp), nil
}

// grpcModeratorServer is the plugin side of a moderation plugin.
type grpcModeratorServer struct {
	pluginpb.UnimplementedModeratorServer
	impl Moderator
}

// Configure implements pluginpb.ModeratorServer.
func (s *grpcModeratorServer) Configure(ctx context.Context, req *pluginpb.ConfigureRequest) (_ *pluginpb.ConfigureResponse, err error) {
	defer recoverToError("Configure", &err)
	if err := s.impl.Configure(ctx, req.GetSettings()); err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.ConfigureResponse{}, nil
}

// Moderate implements pluginpb.ModeratorServer.
func (s *grpcModeratorServer) Moderate(ctx context.Context, req *pluginpb.ModerationRequest) (_ *pluginpb.ModerationResult, err error) {
	defer recoverToError("Moderate", &err)
	res, err := s.impl.Moderate(ctx, &ModerationRequest{
		Text:        req.GetText(),
		Credentials: credentialsFromProto(req.GetCredentials()),
		Rules:       moderationRulesFromProto(req.GetRules()),
	})
	if err != nil {
		return nil, errorToStatus(err)
	}
	if res == nil {
		return nil, errorToStatus(Errorf(KindInternal, "Moderate returned no result"))
	}
	return moderationResultToProto(res), nil
}

// validateSettings implements remoteSettingsValidator, as the provider
// client's.
func (c *grpcModeratorClient) validateSettings(ctx context.Context, settings map[string]string) ([]SettingProblem, bool, error) {
	resp, err := c.rpc.ValidateSettings(ctx, &pluginpb.ConfigureRequest{Settings: settings})
	return settingsFromRPC(ctx, resp, err)
}

// ValidateSettings implements pluginpb.ModeratorServer, as the provider
// server's.
func (s *grpcModeratorServer) ValidateSettings(ctx context.Context, req *pluginpb.ConfigureRequest) (_ *pluginpb.ValidateSettingsResponse, err error) {
	defer recoverToError("ValidateSettings", &err)
	return settingsToRPC(ValidateSettings(ctx, s.impl, req.GetSettings()))
}
