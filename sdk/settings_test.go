package sdk_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

type embedded struct {
	BaseURL string `setting:"base_url"`
}

type decoded struct {
	embedded
	Timeout time.Duration     `setting:"timeout"`
	Count   *int              `setting:"count"`
	On      bool              `setting:"on"`
	Rate    float64           `setting:"rate"`
	Formats []string          `setting:"formats"`
	Voices  map[string]string `setting:"voices.*"`
}

func (d *decoded) CheckSettings() []sdk.SettingProblem {
	if d.Count != nil && *d.Count > 10 {
		return []sdk.SettingProblem{{Path: "count", Message: "at most 10"}}
	}
	return nil
}

func TestDecodeSettings(t *testing.T) {
	var d decoded
	problems := sdk.DecodeSettings(map[string]string{
		"base_url": " http://x ", "timeout": "2s", "count": "3", "on": "true", "rate": "1.5",
		"formats": "pcm, ,wav", "voices.a": "x,y", "voices.b": "z", "empty": "",
	}, &d)
	// "empty" is unknown even without a value: a typo is a typo.
	if len(problems) != 1 || problems[0].Path != "empty" {
		t.Fatalf("problems = %v, want one naming empty", problems)
	}
	n := 3
	want := decoded{embedded: embedded{"http://x"}, Timeout: 2 * time.Second, Count: &n, On: true, Rate: 1.5,
		Formats: []string{"pcm", "wav"}, Voices: map[string]string{"a": "x,y", "b": "z"}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("decoded %+v, want %+v", d, want)
	}

	// Every mistake at once, sorted by key, each naming its key.
	problems = sdk.DecodeSettings(map[string]string{"timeout": "soon", "count": "many", "on": "yes please", "base_ulr": "http://x", "timeout_": ""}, new(decoded))
	var paths []string
	for _, p := range problems {
		paths = append(paths, p.Path)
		if p.Message == "" {
			t.Errorf("%s: no message", p.Path)
		}
	}
	if got := strings.Join(paths, " "); got != "base_ulr count on timeout timeout_" {
		t.Errorf("problems name %q: %v", got, problems)
	}
	if !strings.Contains(problems[0].Message, "did you mean base_url?") {
		t.Errorf("no hint for a typo: %q", problems[0].Message)
	}
	// The struct's own check runs once the values parse.
	if p := sdk.DecodeSettings(map[string]string{"count": "11"}, new(decoded)); len(p) != 1 || p[0].Message != "at most 10" {
		t.Errorf("CheckSettings: %v", p)
	}
	// An empty value is the default; a negative duration is refused.
	if p := sdk.DecodeSettings(map[string]string{"timeout": " ", "count": ""}, new(decoded)); len(p) != 0 {
		t.Errorf("empty values: %v", p)
	}
	if p := sdk.DecodeSettings(map[string]string{"timeout": "-1s"}, new(decoded)); len(p) != 1 {
		t.Errorf("negative duration: %v", p)
	}
}

func TestClosest(t *testing.T) {
	words := []string{"instances", "managed", "plugin", "api_key"}
	for s, want := range map[string]string{"instanses": "instances", "manged": "managed", "plugni": "plugin", "model": "", "api": "", "xx": ""} {
		if got := sdk.Closest(s, words); got != want {
			t.Errorf("Closest(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestValidateSettingsOverTheWire checks settings in the test plugin's
// process: its settings struct refuses an unknown key and a bad value,
// all at once, and checking does not configure it.
func TestValidateSettingsOverTheWire(t *testing.T) {
	p := sdktest.StartPlugin(t, testPlugin)
	ctx := context.Background()
	problems, checked, err := sdk.ValidateSettings(ctx, p, map[string]string{"max_text_chars": "many", "call_lgo": "x", "output_formats": "pcm"})
	if err != nil || !checked {
		t.Fatalf("checked %v, err %v", checked, err)
	}
	if len(problems) != 2 || problems[0].Path != "call_lgo" || problems[1].Path != "max_text_chars" {
		t.Fatalf("problems = %v", problems)
	}
	if !strings.Contains(problems[0].Message, "did you mean call_log?") {
		t.Errorf("message %q", problems[0].Message)
	}
	problems, _, err = sdk.ValidateSettings(ctx, p, map[string]string{"max_text_chars": "7", "output_formats": "wav"})
	if err != nil || len(problems) != 0 {
		t.Fatalf("good settings: %v, %v", problems, err)
	}
	// Not applied: the models keep the defaults.
	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := d.Models[0]; m.MaxTextChars == 7 {
		t.Errorf("ValidateSettings configured the plugin: %+v", m)
	}
	// Configure refuses what ValidateSettings refuses, naming every key.
	err = p.Configure(ctx, map[string]string{"max_text_chars": "many", "call_lgo": "x"})
	if e := sdk.AsError(err); e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, "call_lgo") || !strings.Contains(e.Message, "max_text_chars") {
		t.Errorf("Configure: %v", err)
	}
}

// noCheck is a provider with no way to check its settings.
type noCheck struct{ sdk.UnimplementedProvider }

func TestValidateSettingsUnchecked(t *testing.T) {
	if _, checked, err := sdk.ValidateSettings(context.Background(), noCheck{}, map[string]string{"x": "y"}); checked || err != nil {
		t.Errorf("checked %v, err %v: want unchecked", checked, err)
	}
}
