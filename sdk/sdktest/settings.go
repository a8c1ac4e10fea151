package sdktest

import (
	"maps"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

// unknownSetting is a key no provider takes.
const unknownSetting = "sdktest_no_such_setting"

// checkSettings is the Settings check: good settings pass, an unknown key
// and each bad value come back as problems naming the key, and checking
// changes nothing (the checks after it still run on Settings).
func (r *runner) checkSettings(t *testing.T) {
	validate := func(settings map[string]string) []sdk.SettingProblem {
		t.Helper()
		ctx, cancel := r.callContext(t.Context())
		defer cancel()
		problems, checked, err := sdk.ValidateSettings(ctx, r.p, settings)
		if err != nil {
			t.Fatalf("ValidateSettings: %v", err)
		}
		if !checked {
			t.Fatal("the provider does not check its settings: implement sdk.SettingsValidator, or sdk.SettingsDecoder over the struct Configure decodes into")
		}
		return problems
	}
	good := maps.Clone(r.cfg.Settings)
	if good == nil {
		good = map[string]string{}
	}
	if problems := validate(good); len(problems) > 0 {
		t.Errorf("the good settings %v gave problems: %v", redacted(good), problems)
	}
	wantProblem := func(settings map[string]string, key string) {
		t.Helper()
		problems := validate(settings)
		for _, p := range problems {
			if p.Path == key {
				if p.Message == "" {
					t.Errorf("the problem with %s has no message", key)
				}
				return
			}
		}
		t.Errorf("settings with %s = %q: got problems %v, want one naming %s", key, settings[key], problems, key)
	}
	unknown := maps.Clone(good)
	unknown[unknownSetting] = "1"
	wantProblem(unknown, unknownSetting)
	for key, value := range r.cfg.BadSettings {
		bad := maps.Clone(good)
		bad[key] = value
		wantProblem(bad, key)
	}
}

// redacted is settings with every value hidden: good settings may hold
// a key.
func redacted(settings map[string]string) map[string]string {
	out := make(map[string]string, len(settings))
	for k := range settings {
		out[k] = "…"
	}
	return out
}
