package main

import (
	"context"
	"errors"
	"os"
	"strings"
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
		last.Header.Get("Authorization") != "Bearer "+openaimoderation.Key || last.Header.Get("Content-Type") != "application/json" {
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
	const wrongKey = "sk-wrong-key-that-must-not-leak-42"
	tests := []struct {
		name      string
		setup     func()
		key       string
		kind      sdk.ErrorKind
		status    int
		code      string
		retryable bool
	}{
		{"wrong key", nil, wrongKey, sdk.KindUnauthorized, 401, "invalid_api_key", false},
		{"no key", nil, "", sdk.KindUnauthorized, 0, "", false},
		{"server error", func() { srv.FailNext(1, fakeupstream.Fault{Status: 500}) }, openaimoderation.Key, sdk.KindUnavailable, 500, "", true},
		{"overloaded", func() { srv.FailNext(1, fakeupstream.Fault{Status: 503}) }, openaimoderation.Key, sdk.KindUnavailable, 503, "", true},
		{"rate limited", func() { srv.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"}) }, openaimoderation.Key, sdk.KindRateLimited, 429, "rate_limit_exceeded", true},
		{"out of quota", func() { srv.FailNext(1, fakeupstream.Fault{Status: 429, Code: "insufficient_quota"}) }, openaimoderation.Key, sdk.KindRateLimited, 429, "insufficient_quota", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			_, err := moderate(m, "hello", tt.key)
			var se *sdk.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want an *sdk.Error", err)
			}
			if se.Kind != tt.kind || se.UpstreamStatus != tt.status || se.UpstreamCode != tt.code || se.Retryable != tt.retryable {
				t.Errorf("err = %+v; want kind %v status %d code %q retryable %v", se, tt.kind, tt.status, tt.code, tt.retryable)
			}
			if strings.Contains(se.Message, wrongKey) || strings.Contains(se.Message, wrongKey[4:len(wrongKey)-4]) {
				t.Errorf("the error message reveals the key: %q", se.Message)
			}
			if tt.kind == sdk.KindRateLimited && tt.retryable && se.RetryAfter != 2*time.Second {
				t.Errorf("RetryAfter = %v, want 2s", se.RetryAfter)
			}
		})
	}
}

func TestModerateTimeout(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	m := start(t, srv)
	srv.SetLatency(time.Hour) // the endpoint never answers
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
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
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	m := sdktest.StartModerator(t, pluginPath)
	for name, s := range map[string]map[string]string{
		"not a url":         {"base_url": "api.example"},
		"unknown setting":   {"base_ur": "http://127.0.0.1:1"},
		"threshold above 1": {"threshold": "1.5"},
		"threshold text":    {"threshold": "high"},
		"empty model":       {"model": ""},
		"bad timeout":       {"timeout": "soon"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := m.Configure(context.Background(), s); err == nil {
				t.Errorf("Configure(%v) succeeded", s)
			}
		})
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
