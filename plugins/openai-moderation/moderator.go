package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

const (
	defaultBaseURL = "https://api.openai.com/v1"
	defaultModel   = "omni-moderation-latest"
	defaultTimeout = 30 * time.Second
	// maxResponseBytes bounds what is read from the endpoint: a moderation
	// answer is a few kilobytes.
	maxResponseBytes = 1 << 20
	// maxMessageLen bounds an upstream error message passed on.
	maxMessageLen = 300
)

// settings are the parsed Configure settings.
type settings struct {
	baseURL   string
	model     string
	threshold float64 // 0: off
	apiKey    string
	timeout   time.Duration
}

// moderator implements sdk.Moderator over the moderation endpoint.
type moderator struct {
	mu     sync.RWMutex
	cfg    settings
	client *http.Client
}

func newModerator() *moderator {
	m := &moderator{}
	m.apply(settings{baseURL: defaultBaseURL, model: defaultModel, timeout: defaultTimeout})
	return m
}

func (m *moderator) apply(s settings) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = s
	m.client = &http.Client{
		Timeout: s.timeout,
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
	}
}

// Configure implements sdk.Moderator. Unknown settings are rejected so
// that a typo in gateway.yaml fails at start-up instead of being ignored.
func (m *moderator) Configure(_ context.Context, in map[string]string) error {
	s := settings{baseURL: defaultBaseURL, model: defaultModel, timeout: defaultTimeout}
	for k, v := range in {
		switch k {
		case "base_url":
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return sdk.Errorf(sdk.KindInvalidRequest, "base_url %q is not an http(s) URL", v)
			}
			s.baseURL = strings.TrimRight(v, "/")
		case "model":
			if v == "" {
				return sdk.Errorf(sdk.KindInvalidRequest, "model must not be empty")
			}
			s.model = v
		case "threshold":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 1 {
				return sdk.Errorf(sdk.KindInvalidRequest, "threshold %q must be a number above 0 and at most 1", v)
			}
			s.threshold = f
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return sdk.Errorf(sdk.KindInvalidRequest, "timeout %q must be a positive duration like 10s", v)
			}
			s.timeout = d
		case "api_key":
			s.apiKey = v
		default:
			return sdk.Errorf(sdk.KindInvalidRequest, "unknown setting %q (known: base_url, model, threshold, timeout, api_key)", k)
		}
	}
	m.apply(s)
	return nil
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

// errorBody is OpenAI's error format.
type errorBody struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// Moderate implements sdk.Moderator.
func (m *moderator) Moderate(ctx context.Context, req *sdk.ModerationRequest) (*sdk.ModerationResult, error) {
	m.mu.RLock()
	cfg, client := m.cfg, m.client
	m.mu.RUnlock()
	key := req.Credentials.APIKey
	if key == "" {
		key = cfg.apiKey
	}
	if key == "" {
		return nil, sdk.Errorf(sdk.KindUnauthorized, "no API key: set api_key on the moderation plugin")
	}
	body, err := json.Marshal(moderationRequest{Model: cfg.model, Input: req.Text})
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "encode request: %v", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.baseURL+"/moderations", bytes.NewReader(body))
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "build request: %v", err)
	}
	hreq.Header.Set("Authorization", "Bearer "+key)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "voxgate-openai-moderation")
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if len(data) > maxResponseBytes {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "the moderation endpoint's answer is too large", UpstreamStatus: resp.StatusCode}
	}
	if resp.StatusCode/100 != 2 {
		return nil, upstreamError(resp, data, key)
	}
	var mr moderationResponse
	if err := json.Unmarshal(data, &mr); err != nil || len(mr.Results) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "the moderation endpoint's answer has no results", UpstreamStatus: resp.StatusCode}
	}
	r := mr.Results[0]
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

// upstreamError maps a non-2xx answer to an sdk.Error, keeping the
// upstream status and code. The message never carries the key: an
// authentication failure gets a fixed message, and any other upstream
// message is scrubbed of it.
func upstreamError(resp *http.Response, data []byte, key string) *sdk.Error {
	var eb errorBody
	_ = json.Unmarshal(data, &eb)
	code := ""
	if raw := bytes.TrimSpace(eb.Error.Code); len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &code); err != nil {
			code = string(raw)
		}
	}
	msg := eb.Error.Message
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	msg = strings.ReplaceAll(msg, key, "[redacted]")
	if len(msg) > maxMessageLen {
		msg = msg[:maxMessageLen] + "..."
	}
	e := &sdk.Error{UpstreamStatus: resp.StatusCode, UpstreamCode: code, Message: "moderation endpoint: " + msg}
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Kind = sdk.KindUnauthorized
		e.Message = "the moderation endpoint rejected the API key"
	case s == http.StatusTooManyRequests:
		e.Kind = sdk.KindRateLimited
		// Out of quota is not cured by waiting.
		e.Retryable = code != "insufficient_quota"
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	case s == http.StatusRequestTimeout || s == http.StatusGatewayTimeout:
		e.Kind, e.Retryable = sdk.KindTimeout, true
	case s >= 500:
		e.Kind, e.Retryable = sdk.KindUnavailable, true
	case s == http.StatusBadRequest || s == http.StatusNotFound || s == http.StatusRequestEntityTooLarge || s == http.StatusUnprocessableEntity:
		e.Kind = sdk.KindInvalidRequest
	default:
		e.Kind = sdk.KindUpstream
	}
	return e
}

// retryAfter parses Retry-After as seconds (fractions allowed) or an HTTP
// date; 0 if absent or unparsable.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// transportError classifies a failed HTTP exchange.
func transportError(ctx context.Context, err error) *sdk.Error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &sdk.Error{Kind: sdk.KindTimeout, Message: "the moderation endpoint did not answer in time", Retryable: true}
	case ctx.Err() != nil:
		return &sdk.Error{Kind: sdk.KindUnavailable, Message: "the moderation call was cancelled"}
	}
	return &sdk.Error{Kind: sdk.KindUnavailable, Message: fmt.Sprintf("cannot reach the moderation endpoint: %v", err), Retryable: true}
}
