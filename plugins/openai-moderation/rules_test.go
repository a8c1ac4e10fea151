package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openaimoderation"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

var stockRules = []sdk.ModerationRule{
	{Name: "no-stock-tips", Prompt: "Block any text that promotes a specific publicly traded stock"},
	{Name: "no-competitors", Prompt: "Block any text that names a competitor of ours"},
}

func moderateRules(m sdk.Moderator, text string, rules []sdk.ModerationRule) (*sdk.ModerationResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Moderate(ctx, &sdk.ModerationRequest{Text: text, Credentials: sdk.Credentials{APIKey: openaimoderation.Key}, Rules: rules})
}

// TestCustomRules: a request with rules is answered by the chat model, in
// OpenAI's documented chat completion wire format, naming the rule that
// blocked.
func TestCustomRules(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	srv.Violate("no-stock-tips", "buy ACME shares", 0.88)
	srv.Violate("no-competitors", "globex", 0.7)
	m := start(t, srv)
	tests := []struct {
		text, rule string
		decision   string
		confidence float64
	}{
		{"The weather is lovely today.", "", sdk.DecisionAllow, 0.97},
		{"You should buy ACME shares now!", "no-stock-tips", sdk.DecisionBlock, 0.88},
		{"Globex makes worse widgets.", "no-competitors", sdk.DecisionBlock, 0.7},
		{"Globex says buy ACME shares", "no-stock-tips", sdk.DecisionBlock, 0.88}, // the first rule in the order sent
	}
	for _, tt := range tests {
		res, err := moderateRules(m, tt.text, stockRules)
		if err != nil {
			t.Fatalf("%q: %v", tt.text, err)
		}
		if res.Decision != tt.decision || res.Rule != tt.rule || res.Confidence != tt.confidence {
			t.Errorf("%q: %+v, want %s %q %v", tt.text, res, tt.decision, tt.rule, tt.confidence)
		}
		if strings.Contains(res.Detail, tt.text) {
			t.Errorf("detail %q repeats the text", res.Detail)
		}
	}
	if n := srv.CallsTo(openaimoderation.Path); n != 0 {
		t.Errorf("a rules check called the moderation endpoint %d times", n)
	}
	// The wire: the documented request, the rules and the text in the
	// user message, the answer's shape fixed by response_format.
	last, _ := srv.LastRequest()
	var body openaimoderation.ChatRequest
	if err := last.JSON(&body); err != nil {
		t.Fatal(err)
	}
	if last.Path != openaimoderation.ChatPath || last.Header.Get("Authorization") != "Bearer "+openaimoderation.Key ||
		*body.Model != "gpt-5.4-nano" || len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" ||
		body.ResponseFormat == nil || body.ResponseFormat.Type != "json_schema" {
		t.Fatalf("request %s %+v", last.Path, body)
	}
	var schema struct {
		Name   string
		Strict bool
	}
	_ = json.Unmarshal(body.ResponseFormat.JSONSchema, &schema)
	var in openaimoderation.RulesInput
	if err := json.Unmarshal([]byte(body.Messages[1].Content), &in); err != nil || in.Text != "Globex says buy ACME shares" ||
		len(in.Rules) != 2 || in.Rules[1].Name != "no-competitors" || in.Rules[1].Rule != stockRules[1].Prompt || !schema.Strict {
		t.Errorf("user message %s, schema %+v", body.Messages[1].Content, schema)
	}

	// chat_model picks the model.
	mini := start(t, srv, "chat_model", "gpt-4o-mini")
	if _, err := moderateRules(mini, "hello", stockRules); err != nil {
		t.Fatal(err)
	}
	last, _ = srv.LastRequest()
	_ = last.JSON(&body)
	if *body.Model != "gpt-4o-mini" {
		t.Errorf("model %q", *body.Model)
	}
}

// TestCustomRulesBadAnswers: answers that are not the verdict asked for,
// and error answers, are failures the ruleset's mode decides, never a
// silent allow.
func TestCustomRulesBadAnswers(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	m := start(t, srv)
	unknownModel := start(t, srv, "chat_model", "no-such-model")
	for _, content := range []string{
		`not json`,
		`{"violated_rule":null}`,
		`{"violated_rule":"no-such-rule","confidence":0.9}`,
		`{"violated_rule":null,"confidence":0.9,"extra":1}`,
	} {
		c := content
		srv.SetChatContent(&c)
		_, err := moderateRules(m, "hello", stockRules)
		var se *sdk.Error
		if !errors.As(err, &se) || se.Kind != sdk.KindUpstream {
			t.Errorf("content %s: %v, want an upstream error", content, err)
		}
	}
	srv.SetChatContent(nil)
	_, err := moderateRules(unknownModel, "hello", stockRules)
	if se := sdk.AsError(err); se == nil || se.Kind != sdk.KindInvalidRequest || se.UpstreamStatus != 404 || se.UpstreamCode != "model_not_found" {
		t.Errorf("unknown chat model: %v", err)
	}
	srv.FailNext(1, fakeupstream.Fault{Path: openaimoderation.ChatPath, Status: 503})
	if _, err := moderateRules(m, "hello", stockRules); sdk.AsError(err) == nil || sdk.AsError(err).Kind != sdk.KindUnavailable {
		t.Errorf("503: %v", err)
	}
	_, err = m.Moderate(context.Background(), &sdk.ModerationRequest{Text: "x", Credentials: sdk.Credentials{APIKey: "sk-wrong-key-000000000"}, Rules: stockRules})
	if se := sdk.AsError(err); se == nil || se.Kind != sdk.KindUnauthorized || strings.Contains(se.Message, "sk-wrong-key-000000000") {
		t.Errorf("wrong key: %v", err)
	}
}

// TestCategoryThresholds: with category_thresholds a category blocks when
// its score exceeds its threshold, null switches a category off, a
// category without one blocks when flagged, and sexual/minors always
// blocks when flagged.
func TestCategoryThresholds(t *testing.T) {
	srv := openaimoderation.New(t, fakeupstream.Options{})
	srv.Flag("meh", "violence", 0.3)
	srv.Flag("zorblax", "harassment", 0.91)
	srv.Flag("nsfw", "sexual", 0.8)
	srv.Flag("minorword", "sexual/minors", 0.6)
	m := start(t, srv, "category_thresholds", "violence=0.25, harassment=0.95, sexual=null")
	for _, tt := range []struct {
		text, decision, category string
	}{
		{"meh", sdk.DecisionBlock, "violence"},            // 0.3 > 0.25, though not flagged
		{"you zorblax", sdk.DecisionAllow, ""},            // flagged, but 0.91 is under 0.95
		{"nsfw", sdk.DecisionAllow, ""},                   // switched off
		{"minorword", sdk.DecisionBlock, "sexual/minors"}, // always on
		{"hello there", sdk.DecisionAllow, ""},
	} {
		res, err := moderate(m, tt.text, openaimoderation.Key)
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != tt.decision || res.Category != tt.category {
			t.Errorf("%q: %+v, want %s %q", tt.text, res, tt.decision, tt.category)
		}
	}
	unlisted := start(t, srv, "category_thresholds", "violence=0.9")
	if res, _ := moderate(unlisted, "you zorblax", openaimoderation.Key); res.Decision != sdk.DecisionBlock || res.Category != "harassment" {
		t.Errorf("a flagged category without a threshold: %+v", res)
	}
	for _, bad := range []string{"violence", "violence=2", "violence=x", "sexual/minors=null", " , "} {
		mm := sdktestStart(t)
		if err := mm.Configure(context.Background(), map[string]string{"base_url": srv.BaseURL(), "category_thresholds": bad}); err == nil {
			t.Errorf("category_thresholds %q accepted", bad)
		}
	}
	mm := sdktestStart(t)
	if err := mm.Configure(context.Background(), map[string]string{"base_url": srv.BaseURL(), "chat_model": " "}); err == nil {
		t.Error("an empty chat_model accepted")
	}
}

// sdktestStart runs the plugin without configuring it.
func sdktestStart(t *testing.T) sdk.Moderator {
	t.Helper()
	return sdktest.StartModerator(t, pluginPath)
}
