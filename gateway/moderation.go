package gateway

import (
	"github.com/voxgate/voxgate/gateway/pluginhost"
	"github.com/voxgate/voxgate/gateway/speech"
)

// moderator builds the moderation engine from the config's rulesets and
// the moderation plugins started on host.
func (g *Gateway) moderator(host *pluginhost.Host) (speech.Moderator, error) {
	return nil, nil
}
