package pluginhost

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/sdk"
)

// SettingsError is a plugin's verdict on its settings: every problem it
// found. Start returns it (wrapped) instead of configuring the plugin, so
// that a start names every mistake of a provider block at once.
type SettingsError struct {
	// Plugin is the spec's name ("openai", "moderation.x").
	Plugin string
	// Problems are the mistakes, at least one.
	Problems []sdk.SettingProblem
}

// Error lists the problems.
func (e *SettingsError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("plugin %q refuses its settings: %s", e.Plugin, strings.Join(parts, "; "))
}

// validate asks the plugin (a Provider or Moderator) to check the spec's
// settings before Configure; a plugin that cannot check them is
// configured as before.
func validate(ctx context.Context, sp Spec, plugin any) error {
	problems, _, err := sdk.ValidateSettings(ctx, plugin, sp.Settings)
	if err != nil {
		return fmt.Errorf("validate settings: %w", err)
	}
	if len(problems) > 0 {
		return &SettingsError{Plugin: sp.Name, Problems: problems}
	}
	return nil
}

// CheckSettings starts one process of sp's plugin, asks it to check the
// spec's settings without configuring it, and stops it: what `voxgate
// config check` and a reload use to check provider blocks without a
// running gateway. checked is false when the plugin cannot check its
// settings (built before sdk.SettingsValidator).
func CheckSettings(ctx context.Context, sp Spec, opts Options) (problems []sdk.SettingProblem, checked bool, err error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	cfg := sdk.ClientConfig(command(sp))
	cfg.StartTimeout = opts.StartTimeout
	cfg.Logger = newHCLogger(opts.Logger, "plugin."+sp.Name)
	client := plugin.NewClient(cfg)
	defer client.Kill()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if sp.Kind == KindModerator {
		mod, err := sdk.DispenseModerator(client)
		if err != nil {
			return nil, false, err
		}
		return sdk.ValidateSettings(ctx, mod, sp.Settings)
	}
	prov, err := sdk.DispenseProvider(client)
	if err != nil {
		return nil, false, err
	}
	return sdk.ValidateSettings(ctx, prov, sp.Settings)
}
