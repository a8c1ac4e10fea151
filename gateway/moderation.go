package gateway

import (
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// moderator builds the moderation engine from the config's rulesets and
// the moderation plugins started on host (pool "moderation."+name). It is
// built even when no ruleset is configured, so that every request's log
// row says moderation was off rather than leaving the field empty.
func (g *Gateway) moderator(host *pluginhost.Host) (speech.Moderator, error) {
	plugins := func(name string) sdk.Moderator {
		if host == nil {
			return nil
		}
		// A nil *Pool must not become a non-nil sdk.Moderator.
		if p := host.Pool("moderation." + name); p != nil {
			return p
		}
		return nil
	}
	e, err := moderation.New(g.cfg, plugins, g.metrics, g.log.Named("moderation"))
	if err != nil {
		return nil, err
	}
	return e, nil
}
