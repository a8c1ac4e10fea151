package sdktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

// The kit is tested the only way that shows it can fail: it runs against
// the test kit plugin (internal/testplugin, a real process) wrapped in a
// provider that breaks one rule, in a child process of this test binary,
// and the child's verdict is checked check by check. The "none" case is
// the control: the unbroken plugin passes.

// testPlugin is the test kit plugin, built once by TestMain (or handed to a
// child process through pluginEnv).
var testPlugin string

const (
	pluginEnv = "SDKTEST_TEST_PLUGIN"
	brokenEnv = "SDKTEST_BROKEN"
	modelEnv  = "SDKTEST_MODEL"
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testPlugin = os.Getenv(pluginEnv); testPlugin != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "sdktest-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testPlugin, err = BuildPlugin(context.Background(), "github.com/voxgate/voxgate/internal/testplugin", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// broken wraps a working Provider and breaks the rule its mode names.
type broken struct {
	sdk.Provider
	mode string
}

// ValidateSettings forwards to the wrapped plugin, or (settings-lax)
// accepts anything.
func (b *broken) ValidateSettings(ctx context.Context, settings map[string]string) []sdk.SettingProblem {
	if b.mode == "settings-lax" {
		return nil
	}
	problems, _, err := sdk.ValidateSettings(ctx, b.Provider, settings)
	if err != nil {
		return []sdk.SettingProblem{{Message: err.Error()}}
	}
	return problems
}

func (b *broken) Describe(ctx context.Context) (*sdk.Description, error) {
	d, err := b.Provider.Describe(ctx)
	if err == nil && b.mode == "bad-default-model" {
		d.DefaultModel = "nope"
	}
	return d, err
}

func (b *broken) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	vs, err := b.Provider.Voices(ctx, req)
	if b.mode == "empty-voice-id" {
		vs = append(vs, sdk.Voice{Name: "nameless"})
	}
	return vs, err
}

func (b *broken) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	switch b.mode {
	case "ignores-cancel":
		ctx = context.WithoutCancel(ctx)
	case "speed-ignored":
		req.Speed = 0
	case "wrong-rate":
		req.SampleRate = 0
	}
	resp, err := b.Provider.Synthesize(ctx, req)
	if err != nil {
		var e *sdk.Error
		if b.mode == "invalid-voice-internal" && errors.As(err, &e) && e.Kind == sdk.KindInvalidRequest {
			return nil, errors.New(e.Message)
		}
		return nil, err
	}
	switch b.mode {
	case "timestamps-reversed":
		slices.Reverse(resp.Timestamps)
	case "too-long":
		if FormatOf(resp.MediaType) == sdk.FormatPCM {
			resp.Audio = append(resp.Audio, make([]byte, 30*16000*2)...)
		}
	case "bad-wav":
		if FormatOf(resp.MediaType) == sdk.FormatWAV {
			resp.Audio = resp.Audio[:len(resp.Audio)-1]
		}
	}
	return resp, nil
}

func (b *broken) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	switch b.mode {
	case "ignores-cancel":
		return b.Provider.Stream(context.WithoutCancel(ctx), req, send)
	case "stream-no-mediatype":
		return b.Provider.Stream(ctx, req, func(c sdk.Chunk) error {
			c.MediaType = ""
			return send(c)
		})
	case "send-after-error":
		return b.Provider.Stream(ctx, req, func(c sdk.Chunk) error {
			send(c)
			return nil
		})
	case "one-chunk":
		var all sdk.Chunk
		err := b.Provider.Stream(ctx, req, func(c sdk.Chunk) error {
			if all.MediaType == "" {
				all.MediaType = c.MediaType
			}
			all.Data = append(all.Data, c.Data...)
			return nil
		})
		if err != nil {
			return err
		}
		return send(all)
	}
	return b.Provider.Stream(ctx, req, send)
}

func (b *broken) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	switch b.mode {
	case "clone-wrong-kind":
		return nil, sdk.Errorf(sdk.KindInternal, "cloning went wrong")
	case "clone-unusable":
		return &sdk.CloneResponse{VoiceID: "made-up"}, nil
	}
	return b.Provider.Clone(ctx, req)
}

// TestBrokenProviderHelper is the child side of TestRunCatchesBrokenProviders.
func TestBrokenProviderHelper(t *testing.T) {
	mode := os.Getenv(brokenEnv)
	if mode == "" {
		t.Skip("runs only as the child of TestRunCatchesBrokenProviders")
	}
	b := &broken{Provider: StartPlugin(t, testPlugin), mode: mode}
	cfg := Config{
		Model:        os.Getenv(modelEnv),
		InvalidVoice: "no-such-voice",
	}
	if strings.HasPrefix(mode, "plan") {
		// A planner with an HTTP upstream of its own (plan_test.go).
		cfg.Credentials = sdk.Credentials{APIKey: planKey}
		Run(t, newPlanning(t, b), cfg)
		return
	}
	Run(t, b, cfg)
}

func TestRunCatchesBrokenProviders(t *testing.T) {
	tests := []struct {
		mode  string
		model string
		fails []string // the checks that must fail, and no others
	}{
		{"none", "test", nil},
		{"none", "basic", nil},
		{"bad-default-model", "", []string{CheckDescribe}},
		{"empty-voice-id", "test", []string{CheckVoices}},
		{"wrong-rate", "test", []string{CheckSynthesize}},
		{"bad-wav", "test", []string{CheckSynthesize}},
		{"too-long", "test", []string{CheckSynthesize, CheckSpeed, CheckTimestamps, CheckClone, CheckConcurrent}},
		{"speed-ignored", "test", []string{CheckSpeed}},
		{"timestamps-reversed", "test", []string{CheckTimestamps}},
		{"stream-no-mediatype", "test", []string{CheckStream}},
		{"one-chunk", "test", []string{CheckStream}},
		{"invalid-voice-internal", "test", []string{CheckInvalidVoice}},
		{"clone-unusable", "test", []string{CheckClone}},
		{"clone-wrong-kind", "basic", []string{CheckClone}},
		{"ignores-cancel", "test", []string{CheckCancel}},
		{"send-after-error", "test", []string{CheckCancel}},
		{"planner", "test", nil},
		{"planner", "basic", nil},
		{"plan-no-placeholder", "test", []string{CheckPlan}},
		{"plan-wrong-mediatype", "test", []string{CheckPlan}},
		{"plan-keyless", "basic", []string{CheckPlan}},
		{"plan-unsupported", "basic", []string{CheckPlan}},
		{"plan-explain-leaks", "test", []string{CheckExplain}},
		{"plan-explain-internal", "basic", []string{CheckExplain}},
		{"settings-lax", "basic", []string{CheckSettings}},
	}
	failLine := regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenProviderHelper/(\w+) `)
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.model, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenProviderHelper$", "-test.v")
			cmd.Env = append(os.Environ(), pluginEnv+"="+testPlugin, brokenEnv+"="+tt.mode, modelEnv+"="+tt.model)
			out, err := cmd.CombinedOutput()
			var failed []string
			for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
				failed = append(failed, m[1])
			}
			slices.Sort(failed)
			want := slices.Clone(tt.fails)
			slices.Sort(want)
			if !slices.Equal(failed, want) {
				t.Errorf("failed checks %v, want %v\n%s", failed, want, tail(out))
			}
			if (err == nil) != (len(want) == 0) {
				t.Errorf("child exit: %v, with %d checks expected to fail\n%s", err, len(want), tail(out))
			}
		})
	}
}

// tail returns the end of a child's output, enough to see why it failed.
func tail(out []byte) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}
