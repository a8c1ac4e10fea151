package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openaimoderation"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary built once for this test binary by
// TestMain; every test runs it as a real process, as the gateway does.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

// start runs the plugin against srv with extra settings.
func start(t *testing.T, srv *openaimoderation.Server, extra ...string) sdk.Moderator {
	t.Helper()
	m := sdktest.StartModerator(t, pluginPath)
	settings := map[string]string{"base_url": srv.BaseURL()}
	for i := 0; i+1 < len(extra); i += 2 {
		settings[extra[i]] = extra[i+1]
	}
	if err := m.Configure(context.Background(), settings); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return m
}

func moderate(m sdk.Moderator, text, key string) (*sdk.ModerationResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Moderate(ctx, &sdk.ModerationRequest{Text: text, Credentials: sdk.Credentials{APIKey: key}})
}

func TestModerateVerdicts(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	srv.Flag("zorblax", "harassment", 0.91)
	srv.Flag("threaten", "harassment/threatening", 0.97)
	srv.Flag("meh", "violence", 0.3)
	plain := start(t, srv)
	strict := start(t, srv, "threshold", "0.25", "model", "omni-moderation-2024-09-26")
	tests := []struct {
		name       string
		m          sdk.Moderator
		text       string
		decision   string
		category   string
		confidence float64
	}{
		{"not flagged", plain, "Hello there, lovely weather.", sdk.DecisionAllow, "", 0},
		{"flagged", plain, "you zorblax", sdk.DecisionBlock, "harassment", 0.91},
		{"highest flagged category wins", plain, "zorblax, I threaten you", sdk.DecisionBlock, "harassment/threatening", 0.97},
		{"below the flag, no threshold", plain, "meh", sdk.DecisionAllow, "", 0},
		{"below the flag, over the threshold", strict, "meh", sdk.DecisionBlock, "violence", 0.3},
		{"threshold setting still allows clean text", strict, "Hello there", sdk.DecisionAllow, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := moderate(tt.m, tt.text, openaimoderation.Key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != tt.decision || res.Category != tt.category {
				t.Errorf("result %+v; want %s %q", res, tt.decision, tt.category)
			}
			if tt.decision == sdk.DecisionBlock && res.Confidence != tt.confidence {
				t.Errorf("confidence %v, want %v", res.Confidence, tt.confidence)
			}
			if strings.Contains(res.Detail, tt.text) {
				t.Errorf("detail %q repeats the text", res.Detail)
			}
		})
	}
	// The wire: the documented body and the Bearer key.
	last, ok := srv.LastRequest()
	if !ok {
		t.Fatal("the fake saw no request")
	}
	var body struct{ Model, Input string }
	if err := last.JSON(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "omni-moderation-2024-09-26" || body.Input != "Hello there" || last.Path != openaimoderation.Path ||
		last.Header.Get("Authorization") != "Bearer "+openaimoderation.Key || last.Header.Get("Content-Type") != "application/json" ||
		last.Header.Get("Accept") != "application/json" || last.Header.Get("User-Agent") != "voxgate-openai-moderation" {
		t.Errorf("last request: %s %+v %v", last.Path, body, last.Header)
	}
}

func TestModerateDefaultModelAndSettingsKey(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	m := start(t, srv, "api_key", openaimoderation.Key)
	// No credential on the call: the api_key setting is the fallback.
	res, err := moderate(m, "hello", "")
	if err != nil || res.Decision != sdk.DecisionAllow {
		t.Fatalf("Moderate = %+v, %v", res, err)
	}
	last, _ := srv.LastRequest()
	var body struct{ Model string }
	_ = last.JSON(&body)
	if body.Model != "omni-moderation-latest" {
		t.Errorf("model %q, want the default omni-moderation-latest", body.Model)
	}
}

func TestModerateErrors(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	m := start(t, srv)
	unknownModel := start(t, srv, "model", "no-such-model")
	const wrongKey = "sk-wrong-key-that-must-not-leak-42"
	fail := func(f fakeupstream.Fault) func() { return func() { srv.FailNext(1, f) } }
	tests := []struct {
		name       string
		m          sdk.Moderator
		setup      func()
		key        string
		kind       sdk.ErrorKind
		status     int
		code       string
		retryable  bool
		retryAfter time.Duration
	}{
		{"wrong key", m, nil, wrongKey, sdk.KindUnauthorized, 401, "invalid_api_key", false, 0},
		{"no key", m, nil, "", sdk.KindUnauthorized, 0, "", false, 0},
		{"unknown model", unknownModel, nil, openaimoderation.Key, sdk.KindInvalidRequest, 404, "model_not_found", false, 0},
		{"conflict", m, fail(fakeupstream.Fault{Status: 409, Code: "conflict"}), openaimoderation.Key, sdk.KindInvalidRequest, 409, "conflict", false, 0},
		{"server error", m, fail(fakeupstream.Fault{Status: 500}), openaimoderation.Key, sdk.KindUpstream, 500, "server_error", true, 0},
		{"not implemented", m, fail(fakeupstream.Fault{Status: 501}), openaimoderation.Key, sdk.KindUpstream, 501, "server_error", false, 0},
		{"bad gateway", m, fail(fakeupstream.Fault{Status: 502}), openaimoderation.Key, sdk.KindUnavailable, 502, "server_error", true, 0},
		{"overloaded", m, fail(fakeupstream.Fault{Status: 503, RetryAfter: "1"}), openaimoderation.Key, sdk.KindUnavailable, 503, "server_error", true, time.Second},
		{"gateway timeout", m, fail(fakeupstream.Fault{Status: 504}), openaimoderation.Key, sdk.KindTimeout, 504, "server_error", true, 0},
		{"rate limited", m, fail(fakeupstream.Fault{Status: 429, RetryAfter: "2"}), openaimoderation.Key, sdk.KindRateLimited, 429, "rate_limit_exceeded", true, 2 * time.Second},
		{"out of quota", m, fail(fakeupstream.Fault{Status: 429, Code: "insufficient_quota"}), openaimoderation.Key, sdk.KindRateLimited, 429, "insufficient_quota", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			_, err := moderate(tt.m, "hello", tt.key)
			var se *sdk.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want an *sdk.Error", err)
			}
			if se.Kind != tt.kind || se.UpstreamStatus != tt.status || se.UpstreamCode != tt.code || se.Retryable != tt.retryable {
				t.Errorf("err = %+v; want kind %v status %d code %q retryable %v", se, tt.kind, tt.status, tt.code, tt.retryable)
			}
			if se.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", se.RetryAfter, tt.retryAfter)
			}
			if !strings.HasPrefix(se.Message, "openai-moderation: ") {
				t.Errorf("message %q does not name the plugin", se.Message)
			}
			if strings.Contains(se.Message, wrongKey) || strings.Contains(se.Message, wrongKey[4:len(wrongKey)-4]) {
				t.Errorf("the error message reveals the key: %q", se.Message)
			}
		})
	}
}

// TestErrorsNeverCarryTheKey makes the endpoint echo the caller's key in
// its error message and code, whole, masked or cut short, as providers
// do: neither the message nor UpstreamCode may carry it after the trip
// through the plugin process.
func TestErrorsNeverCarryTheKey(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	m := start(t, srv)
	key := openaimoderation.Key
	masked := key[:4] + strings.Repeat("*", len(key)-8) + key[len(key)-4:]
	tests := []struct {
		name  string
		fault fakeupstream.Fault
	}{
		{"whole key in the message", fakeupstream.Fault{Status: 400, Message: "Bad key " + key + " for this model."}},
		{"whole key in the code", fakeupstream.Fault{Status: 400, Code: "invalid_key:" + key}},
		{"masked key on 401", fakeupstream.Fault{Status: 401, Message: "Incorrect API key provided: " + masked + ". You can find your API key in your account settings."}},
		{"key prefix", fakeupstream.Fault{Status: 403, Message: "Key " + key[:12] + "... is disabled", Code: "key_" + key[:10]}},
		{"key in both on 429", fakeupstream.Fault{Status: 429, RetryAfter: "1", Message: "Slow down, " + key, Code: key}},
		{"key in both on 500", fakeupstream.Fault{Status: 500, Message: "internal error for " + key, Code: "err-" + key + "-x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.FailNext(1, tt.fault)
			_, err := moderate(m, "hello", key)
			se := sdk.AsError(err)
			if se == nil || se.UpstreamStatus != tt.fault.Status {
				t.Fatalf("err = %v, want the upstream %d", err, tt.fault.Status)
			}
			for _, leak := range []string{key, key[:8], key[len(key)-12:], masked} {
				if strings.Contains(se.Message, leak) || strings.Contains(se.UpstreamCode, leak) || strings.Contains(err.Error(), leak) {
					t.Errorf("the error reveals the key (%q): message %q, code %q", leak, se.Message, se.UpstreamCode)
				}
			}
		})
	}
}

// TestModerateAttempts: one try unless max_attempts asks for more.
func TestModerateAttempts(t *testing.T) {
	tests := []struct {
		name    string
		extra   []string
		faults  int
		calls   int
		succeed bool
	}{
		{"default: no retry", nil, 1, 1, false},
		{"max_attempts 1", []string{"max_attempts", "1"}, 1, 1, false},
		{"max_attempts 2 recovers", []string{"max_attempts", "2"}, 1, 2, true},
		{"max_attempts 2 gives up", []string{"max_attempts", "2"}, 2, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaimoderation.New(t, fakeupstream.Options{})
			m := start(t, srv, tt.extra...)
			srv.FailNext(tt.faults, fakeupstream.Fault{Status: 503})
			res, err := moderate(m, "hello", openaimoderation.Key)
			if tt.succeed && (err != nil || res.Decision != sdk.DecisionAllow) {
				t.Errorf("Moderate = %+v, %v; want allow", res, err)
			}
			if !tt.succeed {
				if se := sdk.AsError(err); se == nil || se.UpstreamStatus != 503 {
					t.Errorf("err = %v, want the upstream 503", err)
				}
			}
			if got := srv.CallsTo(openaimoderation.Path); got != tt.calls {
				t.Errorf("the endpoint saw %d calls, want %d", got, tt.calls)
			}
		})
	}
}

func TestModerateUnreachable(t *testing.T) {
	srv := openaimoderation.New(nil, fakeupstream.Options{})
	m := start(t, srv)
	srv.Close() // nothing listens at base_url any more
	_, err := moderate(m, "hello", openaimoderation.Key)
	if se := sdk.AsError(err); se == nil || se.Kind != sdk.KindUnavailable || !se.Retryable {
		t.Fatalf("err = %v, want a retryable KindUnavailable", err)
	}
}

func TestModerateTimeout(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	tests := []struct {
		name   string
		extra  []string
		caller time.Duration // the caller's deadline
	}{
		{"the caller's deadline", nil, 300 * time.Millisecond},
		{"the timeout setting", []string{"timeout", "300ms"}, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := start(t, srv, tt.extra...)
			srv.SetLatency(time.Hour) // the endpoint never answers
			ctx, cancel := context.WithTimeout(context.Background(), tt.caller)
			defer cancel()
			_, err := m.Moderate(ctx, &sdk.ModerationRequest{Text: "hello", Credentials: sdk.Credentials{APIKey: openaimoderation.Key}})
			if se := sdk.AsError(err); se == nil || se.Kind != sdk.KindTimeout {
				t.Fatalf("err = %v, want KindTimeout", err)
			}
			// The plugin survives a hung upstream.
			srv.SetLatency(0)
			if res, err := moderate(m, "hello", openaimoderation.Key); err != nil || res.Decision != sdk.DecisionAllow {
				t.Fatalf("after the timeout: %+v, %v", res, err)
			}
		})
	}
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	m := sdktest.StartModerator(t, pluginPath)
	for name, s := range map[string]map[string]string{
		"not a url":             {"base_url": "api.example"},
		"empty url":             {"base_url": ""},
		"unknown setting":       {"base_ur": "http://127.0.0.1:1"},
		"threshold above 1":     {"threshold": "1.5"},
		"threshold text":        {"threshold": "high"},
		"empty model":           {"model": ""},
		"bad timeout":           {"timeout": "soon"},
		"zero timeout":          {"timeout": "0s"},
		"empty timeout":         {"timeout": ""},
		"bad connect_timeout":   {"connect_timeout": "soon"},
		"zero max_attempts":     {"max_attempts": "0"},
		"bad max_idle_conns":    {"max_idle_conns": "many"},
		"unknown provider key":  {"organization": "org-1"},
		"unknown among good":    {"model": "omni-moderation-latest", "colour": "blue"},
		"negative connect time": {"connect_timeout": "-1s"},
	} {
		t.Run(name, func(t *testing.T) {
			err := m.Configure(context.Background(), s)
			if se := sdk.AsError(err); se == nil || se.Kind != sdk.KindInvalidRequest {
				t.Errorf("Configure(%v) = %v, want KindInvalidRequest", s, err)
			}
		})
	}
}

// TestValidateSettingsAllAtOnce: the plugin process checks settings
// without applying them and names every bad key at once.
func TestValidateSettingsAllAtOnce(t *testing.T) {
	m := sdktest.StartModerator(t, pluginPath)
	problems, checked, err := sdk.ValidateSettings(context.Background(), m, map[string]string{
		"base_ur": "http://127.0.0.1:1", "threshold": "high", "max_attempts": "0", "model": "omni-moderation-latest",
	})
	if err != nil || !checked {
		t.Fatalf("checked %v, err %v", checked, err)
	}
	var paths []string
	for _, p := range problems {
		paths = append(paths, p.Path)
	}
	if got := strings.Join(paths, " "); got != "base_ur max_attempts threshold" {
		t.Errorf("problems name %q: %v", got, problems)
	}
	if problems, _, _ := sdk.ValidateSettings(context.Background(), m, map[string]string{"model": "omni-moderation-latest", "timeout": "5s"}); len(problems) != 0 {
		t.Errorf("good settings: %v", problems)
	}
}

// TestConfigureCommonSettings: upstream's common settings are accepted
// besides the plugin's own.
func TestConfigureCommonSettings(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	m := start(t, srv, "connect_timeout", "2s", "max_idle_conns", "8", "max_attempts", "2", "timeout", "5s",
		"threshold", "0.5", "model", "text-moderation-latest", "api_key", openaimoderation.Key)
	if res, err := moderate(m, "hello", ""); err != nil || res.Decision != sdk.DecisionAllow {
		t.Fatalf("Moderate = %+v, %v", res, err)
	}
}

// TestConfigureWhileModerating runs the moderator in process so that the
// race detector sees calls reading the settings Configure replaces.
func TestConfigureWhileModerating(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	srv.Flag("zorblax", "harassment", 0.91)
	m := newModerator()
	settings := map[string]string{"base_url": srv.BaseURL()}
	if err := m.Configure(context.Background(), settings); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				if i%2 == 0 {
					errs <- m.Configure(context.Background(), settings)
					continue
				}
				res, err := moderate(m, "you zorblax", openaimoderation.Key)
				if err == nil && res.Decision != sdk.DecisionBlock {
					err = fmt.Errorf("decision %s, want block", res.Decision)
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name      string
		flagged   bool
		cats      map[string]bool
		scores    map[string]float64
		threshold float64
		decision  string
		category  string
	}{
		{"flagged without categories", true, map[string]bool{}, map[string]float64{"hate": 0.2}, 0, sdk.DecisionBlock, "flagged"},
		{"tie broken by name", true, map[string]bool{"b": true, "a": true}, map[string]float64{"a": 0.8, "b": 0.8}, 0, sdk.DecisionBlock, "a"},
		{"flagged beats a higher unflagged score", true, map[string]bool{"a": true}, map[string]float64{"a": 0.6, "b": 0.9}, 0, sdk.DecisionBlock, "a"},
		{"empty answer", false, nil, nil, 0.5, sdk.DecisionAllow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decide(tt.flagged, tt.cats, tt.scores, tt.threshold)
			if r.Decision != tt.decision || r.Category != tt.category {
				t.Errorf("decide = %+v; want %s %q", r, tt.decision, tt.category)
			}
		})
	}
}
