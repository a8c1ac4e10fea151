package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	// providerName prefixes every error message.
	providerName   = "openai-moderation"
	defaultBaseURL = "https://api.openai.com/v1"
	defaultModel   = "omni-moderation-latest"
	// defaultTimeout bounds a call when the timeout setting is absent; the
	// gateway's ruleset timeout usually ends a call first.
	defaultTimeout = 30 * time.Second
	// maxResponseBytes bounds what is read from the endpoint: a moderation
	// answer is a few kilobytes.
	maxResponseBytes = 1 << 20
)

// api is how the moderation endpoint authenticates and reports errors
// (OpenAI's conventions). It is never modified.
var api = &upstream.API{
	Provider:       providerName,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     upstream.ParseOpenAIError,
	Classify: func(e *sdk.Error) {
		// An exhausted quota is reported as 429, but waiting does not help.
		if e.UpstreamCode == "insufficient_quota" {
			e.Retryable = false
		}
	},
}

// config is one snapshot of the settings and the client they configure.
type config struct {
	*upstream.Endpoint
	model     string
	threshold float64 // 0: off
	apiKey    string  // fallback when a call carries no key
	// categories holds per-category thresholds (category_thresholds);
	// nil: the endpoint's flags decide.
	categories map[string]categoryThreshold
	// chatModel evaluates custom rules (rules.go).
	chatModel string
}

// moderator implements sdk.Moderator over the moderation endpoint. It
// keeps only deployment settings, which Configure swaps atomically: a
// call in flight keeps the snapshot it started with.
type moderator struct {
	cfg atomic.Pointer[config]
}

func newModerator() *moderator {
	c, err := parseConfig(nil)
	if err != nil {
		panic(fmt.Sprintf("default settings: %v", err)) // the defaults are constants
	}
	m := &moderator{}
	m.cfg.Store(c)
	return m
}

// ValidateSettings implements sdk.SettingsValidator: each key checked by
// parseConfig on its own, so that every unknown key and bad value is
// reported at once, naming its key.
func (m *moderator) ValidateSettings(_ context.Context, in map[string]string) []sdk.SettingProblem {
	var problems []sdk.SettingProblem
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if _, err := parseConfig(map[string]string{k: in[k]}); err != nil {
			msg := strings.TrimPrefix(sdk.AsError(err).Message, providerName+": ")
			msg = strings.TrimPrefix(msg, providerName+" settings: ")
			problems = append(problems, sdk.SettingProblem{Path: k, Message: msg})
		}
	}
	return problems
}

// Configure implements sdk.Moderator. Unknown settings are rejected so
// that a typo in gateway.yaml fails at start-up instead of being ignored.
func (m *moderator) Configure(_ context.Context, in map[string]string) error {
	c, err := parseConfig(in)
	if err != nil {
		return err
	}
	if old := m.cfg.Swap(c); old != nil {
		old.Close() // only idle connections go
	}
	return nil
}

// parseConfig reads the settings: the plugin's own keys here, the common
// ones (base_url, timeout, connect_timeout, max_attempts, max_idle_conns)
// through upstream.NewEndpoint. It keeps the plugin's stricter rules:
// base_url and timeout, when present, must not be empty, and timeout must
// be positive (a moderation call is never unbounded).
func parseConfig(in map[string]string) (*config, error) {
	c := &config{model: defaultModel, chatModel: defaultChatModel}
	common := map[string]string{"timeout": defaultTimeout.String()}
	for k, v := range in {
		switch {
		case k == "model":
			if v == "" {
				return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: model must not be empty", providerName)
			}
			c.model = v
		case k == "threshold":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 1 {
				return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: threshold %q must be a number above 0 and at most 1", providerName, v)
			}
			c.threshold = f
		case k == "api_key":
			c.apiKey = v
		case k == "chat_model":
			if strings.TrimSpace(v) == "" {
				return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: chat_model must not be empty", providerName)
			}
			c.chatModel = v
		case k == "category_thresholds":
			cats, err := parseCategoryThresholds(v)
			if err != nil {
				return nil, err
			}
			c.categories = cats
		case k == "timeout":
			if d, err := time.ParseDuration(strings.TrimSpace(v)); err != nil || d <= 0 {
				return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: timeout %q must be a positive duration like 10s", providerName, v)
			}
			common[k] = v
		case k == "base_url" && strings.TrimSpace(v) == "":
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: base_url must not be empty", providerName)
		case upstream.IsSettingKey(k):
			common[k] = v
		default:
			return nil, sdk.Errorf(sdk.KindInvalidRequest,
				"%s: unknown setting %q (known: base_url, model, threshold, category_thresholds, chat_model, timeout, api_key, connect_timeout, max_attempts, max_idle_conns)", providerName, k)
		}
	}
	e, err := upstream.NewEndpoint(api, common)
	if err != nil {
		return nil, err
	}
	c.Endpoint = e
	return c, nil
}

// moderationRequest is the endpoint's request body.
type moderationRequest struct {
	Model string `json:"model"`
	Input string `json:"input"`
}

// moderationResponse is the part of the endpoint's answer used here.
type moderationResponse struct {
	Results []struct {
		Flagged        bool               `json:"flagged"`
		Categories     map[string]bool    `json:"categories"`
		CategoryScores map[string]float64 `json:"category_scores"`
	} `json:"results"`
}

// Moderate implements sdk.Moderator. The timeout setting bounds the whole
// call, the answer's body included.
func (m *moderator) Moderate(ctx context.Context, req *sdk.ModerationRequest) (*sdk.ModerationResult, error) {
	cfg := m.cfg.Load()
	key := req.Credentials.APIKey
	if key == "" {
		key = cfg.apiKey
	}
	if key == "" {
		// Endpoint.Do would refuse too, but its hint (a managed or own
		// key) is for providers; a moderation plugin's key is api_key.
		return nil, sdk.Errorf(sdk.KindUnauthorized, "%s: no API key: set api_key on the moderation plugin", providerName)
	}
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	if len(req.Rules) > 0 {
		return cfg.evaluateRules(ctx, key, req.Text, req.Rules)
	}
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+"/moderations", moderationRequest{Model: cfg.model, Input: req.Text})
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "%s: %v", providerName, err)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "voxgate-openai-moderation")
	// The call is safe to repeat, but it sits on the path of every speech
	// request: it is tried once unless max_attempts asks for more.
	resp, err := cfg.Do(ctx, hreq, key, cfg.MaxAttempts > 1)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, upstream.BodyError(ctx, providerName, "moderation answer", err)
	}
	if len(data) > maxResponseBytes {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: providerName + ": the answer is too large", UpstreamStatus: resp.StatusCode}
	}
	var mr moderationResponse
	if err := json.Unmarshal(data, &mr); err != nil || len(mr.Results) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: providerName + ": the answer has no results", UpstreamStatus: resp.StatusCode}
	}
	r := mr.Results[0]
	if cfg.categories != nil {
		return decideByCategory(r.Categories, r.CategoryScores, cfg.categories), nil
	}
	return decide(r.Flagged, r.Categories, r.CategoryScores, cfg.threshold), nil
}

// decide turns one result into a verdict: block when the endpoint flagged
// the text, or when a category reaches threshold (if set). The category
// reported is the highest-scoring flagged one (or, for a threshold block,
// the highest-scoring one), ties broken by name so answers are stable.
func decide(flagged bool, cats map[string]bool, scores map[string]float64, threshold float64) *sdk.ModerationResult {
	names := make([]string, 0, len(scores))
	for c := range scores {
		names = append(names, c)
	}
	for c := range cats {
		if _, ok := scores[c]; !ok {
			names = append(names, c)
		}
	}
	sort.Strings(names)
	best, bestScore := "", -1.0
	top, topScore := "", -1.0
	for _, c := range names {
		s := scores[c]
		if cats[c] && s > bestScore {
			best, bestScore = c, s
		}
		if s > topScore {
			top, topScore = c, s
		}
	}
	switch {
	case flagged || best != "":
		if best == "" { // flagged without a flagged category
			best, bestScore = "flagged", max(topScore, 0)
		}
		return &sdk.ModerationResult{Decision: sdk.DecisionBlock, Category: best, Confidence: bestScore,
			Detail: fmt.Sprintf("flagged as %s (score %.2f)", best, bestScore)}
	case threshold > 0 && topScore >= threshold:
		return &sdk.ModerationResult{Decision: sdk.DecisionBlock, Category: top, Confidence: topScore,
			Detail: fmt.Sprintf("%s scored %.2f, at or above the threshold %.2f", top, topScore, threshold)}
	}
	return &sdk.ModerationResult{Decision: sdk.DecisionAllow, Confidence: max(topScore, 0)}
}
