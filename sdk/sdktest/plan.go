package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

// Names of the checks Run performs on an sdk.Planner; like the others,
// each is a subtest of that name and can be left out through Config.Skip.
const (
	CheckPlan    = "Plan"
	CheckExplain = "Explain"
)

// fakePlanKey stands for the key in the Explain check when Config has no
// credentials: what matters is that it does not come back.
const fakePlanKey = "sk-sdktest-9f27c4e1a8b35d60"

// unknownPlanModel is a model id no provider has.
const unknownPlanModel = "sdktest-no-such-model"

// maxPlannedBody bounds how much of a planned answer the kit reads: far
// above any clip of the kit's short text, low enough that an upstream
// that never stops cannot eat the test's memory.
const maxPlannedBody = 256 << 20

// maxFailureBody is how much of an error answer the kit hands to Explain,
// as sdk.Failure documents.
const maxFailureBody = 64 << 10

// sdkPkgPath is the import path of package sdk.
var sdkPkgPath = reflect.TypeFor[sdk.Plan]().PkgPath()

// planner returns the provider as an sdk.Planner if it plans. For an
// in-process provider that is the type assertion. The gateway's client of
// a plugin process (a type of package sdk) implements Planner whatever the
// plugin does; the plugin's Describe().Plans says whether it plans.
func (r *runner) planner() (sdk.Planner, bool) {
	pl, ok := r.p.(sdk.Planner)
	if !ok || r.desc.Plans {
		return pl, ok
	}
	t := reflect.TypeOf(r.p)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == sdkPkgPath {
		return nil, false
	}
	return pl, true
}

// mustPlan returns the planner or skips t when the provider does not plan.
func (r *runner) mustPlan(t *testing.T) sdk.Planner {
	t.Helper()
	pl, ok := r.planner()
	if !ok {
		if r.desc.Plans {
			t.Fatal("Describe reports Plans, but the provider does not implement sdk.Planner (Serve sets Plans; leave it alone)")
		}
		t.Skip("the provider does not implement sdk.Planner")
	}
	return pl
}

// checkPlan holds Plan to its contract: for every format (and streaming,
// when the model claims it) the plan is well formed and, sent as the
// gateway sends it, answers audio of the plan's media type, the one
// Synthesize gives. KindUnsupported is allowed per format (the gateway
// falls back to Synthesize), but something must plan. An unknown model
// and missing credentials fail in Plan.
func (r *runner) checkPlan(t *testing.T) {
	pl := r.mustPlan(t)
	client := &http.Client{Timeout: r.cfg.CallTimeout}
	defer client.CloseIdleConnections()

	formats := append([]string{""}, r.formats()...)
	streams := []bool{false}
	if r.model.Capabilities.Streaming {
		streams = append(streams, true)
	}
	var (
		planned     []string // formats Plan answered with a plan
		unsupported int
		synthesized = map[string]string{} // format: Synthesize's media type
	)
	for _, stream := range streams {
		for _, f := range formats {
			name := f
			if name == "" {
				name = "default"
			}
			if stream {
				name += "_stream"
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := r.callContext(t.Context())
				defer cancel()
				req := r.request(sdk.PlanText)
				req.Format = f
				plan, err := pl.Plan(ctx, &sdk.PlanRequest{Request: req, Stream: stream})
				if kindOf(err) == sdk.KindUnsupported {
					unsupported++
					t.Skipf("Plan: %v (the gateway falls back to Synthesize)", r.redact(err.Error()))
				}
				if err != nil {
					t.Fatalf("Plan(format %q, stream %v): %s", f, stream, r.redact(err.Error()))
				}
				if plan == nil {
					t.Fatal("Plan returned a nil plan and no error")
				}
				planned = append(planned, f)
				if _, err := validatePlan(plan); err != nil {
					t.Fatal(err)
				}
				audio, err := r.execute(ctx, client, pl, plan, r.text)
				if err != nil {
					t.Fatalf("sending the plan: %v", err)
				}
				if plan.FrameSize > 1 && len(audio)%plan.FrameSize != 0 {
					t.Errorf("the answer has %d bytes, not a whole number of %d-byte frames", len(audio), plan.FrameSize)
				}
				if _, err := r.decode(plan.MediaType, audio, r.text); err != nil {
					t.Errorf("the planned answer: %v", err)
				}
				if f != "" && FormatOf(plan.MediaType) != f {
					t.Errorf("asked for %s, the plan answers %q", f, plan.MediaType)
				}
				want, ok := synthesized[f]
				if !ok {
					resp, err := r.p.Synthesize(ctx, withFormat(r.request(r.text), f))
					switch {
					case err != nil:
						t.Fatalf("Synthesize, to compare media types: %s", r.redact(err.Error()))
					case resp == nil:
						t.Fatal("Synthesize returned a nil response and no error")
					}
					want = resp.MediaType
					synthesized[f] = want
				}
				if !sameMediaType(plan.MediaType, want) {
					t.Errorf("the plan answers %q, Synthesize %q for the same request", plan.MediaType, want)
				}
			})
		}
	}
	if unsupported == len(formats)*len(streams) {
		t.Fatal("Plan returned KindUnsupported for every format; a Planner must plan something")
	}

	// The remaining subtests use a format Plan accepts, so that what they
	// provoke is the only reason to fail.
	t.Run("UnknownModel", func(t *testing.T) {
		if len(planned) == 0 {
			t.Skip("nothing planned")
		}
		if slices.ContainsFunc(r.desc.Models, func(m sdk.Model) bool { return m.ID == sdk.AnyModel }) {
			// Such a provider passes unlisted ids through: which it
			// refuses is its own rule, not one the kit knows.
			t.Skip("the provider describes sdk.AnyModel, so an unlisted model id is not unknown")
		}
		ctx, cancel := r.callContext(t.Context())
		defer cancel()
		req := withFormat(r.request(sdk.PlanText), planned[0])
		req.Model = unknownPlanModel
		_, err := pl.Plan(ctx, &sdk.PlanRequest{Request: req})
		r.wantPlanKind(t, "Plan for an unknown model", err, sdk.KindInvalidRequest)
	})
	t.Run("NoCredentials", func(t *testing.T) {
		if r.cfg.Credentials.APIKey == "" {
			t.Skip("Config.Credentials has no API key")
		}
		if len(planned) == 0 {
			t.Skip("nothing planned")
		}
		ctx, cancel := r.callContext(t.Context())
		defer cancel()
		req := withFormat(r.request(sdk.PlanText), planned[0])
		req.Credentials = sdk.Credentials{}
		_, err := pl.Plan(ctx, &sdk.PlanRequest{Request: req})
		r.wantPlanKind(t, "Plan without credentials", err, sdk.KindUnauthorized)
	})
}

// wantPlanKind is wantKind with the run's key kept out of the report.
func (r *runner) wantPlanKind(t *testing.T, what string, err error, want sdk.ErrorKind) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s succeeded; want an *sdk.Error of kind %s", what, want)
	case kindOf(err) != want:
		t.Errorf("%s: %s (%T); want an *sdk.Error of kind %s", what, r.redact(err.Error()), err, want)
	}
}

// withFormat sets req's format and returns req.
func withFormat(req *sdk.SynthesizeRequest, format string) *sdk.SynthesizeRequest {
	req.Format = format
	return req
}

// validatePlan checks what the gateway relies on in a plan (TextSlot, and
// no negative sizes or durations) and returns the text slot's offset.
func validatePlan(p *sdk.Plan) (int, error) {
	at, err := p.TextSlot()
	if err != nil {
		return 0, err
	}
	switch {
	case p.FrameSize < 0:
		return 0, fmt.Errorf("plan: FrameSize %d", p.FrameSize)
	case p.MaxAttempts < 0:
		return 0, fmt.Errorf("plan: MaxAttempts %d", p.MaxAttempts)
	case p.Timeout < 0:
		return 0, fmt.Errorf("plan: Timeout %v", p.Timeout)
	case p.ReuseFor < 0:
		return 0, fmt.Errorf("plan: ReuseFor %v", p.ReuseFor)
	}
	return at, nil
}

// fillPlan returns p's body with text, JSON-escaped, in the slot at at,
// as the gateway fills it.
func fillPlan(p *sdk.Plan, at int, text string) ([]byte, error) {
	quoted, err := json.Marshal(text)
	if err != nil {
		return nil, fmt.Errorf("escape the text: %w", err)
	}
	escaped := quoted[1 : len(quoted)-1]
	body := make([]byte, 0, len(p.Body)-len(sdk.PlanText)+len(escaped))
	body = append(body, p.Body[:at]...)
	body = append(body, escaped...)
	return append(body, p.Body[at+len(sdk.PlanText):]...), nil
}

// execute sends plan with text in its slot (one attempt: the kit's
// upstreams answer at once) and returns the body of a successful answer.
// An error answer is reported with what Explain makes of it.
func (r *runner) execute(ctx context.Context, client *http.Client, pl sdk.Planner, plan *sdk.Plan, text string) ([]byte, error) {
	audio, f, err := SendPlan(ctx, client, plan, text)
	switch {
	case err != nil:
		return nil, errors.New(r.redact(err.Error()))
	case f != nil:
		f.Credentials = r.cfg.Credentials
		return nil, fmt.Errorf("%s %s answered %d; Explain: %s", plan.Method, plan.URL, f.Status, r.redact(fmt.Sprint(pl.Explain(ctx, f))))
	}
	return audio, nil
}

// SendPlan sends plan as the gateway does, once, with text JSON-escaped in
// its slot, and returns the body of a 2xx answer, or else the Failure
// (without credentials) that Planner.Explain reads. err is a failure to
// send or read. Plugin tests use it to hold a plan against Synthesize.
func SendPlan(ctx context.Context, client *http.Client, plan *sdk.Plan, text string) (audio []byte, f *sdk.Failure, err error) {
	at, err := plan.TextSlot()
	if err != nil {
		return nil, nil, err
	}
	body, err := fillPlan(plan, at, text)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, plan.Method, plan.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("build the request: %w", err)
	}
	for k, v := range plan.Header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxFailureBody))
		return nil, &sdk.Failure{Status: resp.StatusCode, Header: firstValues(resp.Header), Body: data}, nil
	}
	audio, err = io.ReadAll(io.LimitReader(resp.Body, maxPlannedBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read the answer: %w", err)
	}
	if len(audio) > maxPlannedBody {
		return nil, nil, fmt.Errorf("the answer exceeds %d bytes", maxPlannedBody)
	}
	return audio, nil, nil
}

// firstValues flattens h as sdk.Failure.Header wants it.
func firstValues(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	return out
}

// sameMediaType reports whether a and b name the same type with the same
// parameters, whatever their spelling ("audio/pcm;rate=24000" and
// "audio/PCM; rate=24000" are the same).
func sameMediaType(a, b string) bool {
	ta, pa, err := mime.ParseMediaType(a)
	if err != nil {
		return a == b
	}
	tb, pb, err := mime.ParseMediaType(b)
	return err == nil && ta == tb && maps.Equal(pa, pb)
}

// redact keeps the run's API key (and its first 8 characters, which
// providers echo in masked keys) out of what the kit reports: the kit may
// run against a live API with a real key.
func (r *runner) redact(s string) string {
	return redactKey(s, r.cfg.Credentials.APIKey)
}

func redactKey(s, key string) string {
	if key == "" {
		return s
	}
	s = strings.ReplaceAll(s, key, "<key>")
	if len(key) >= 8 {
		s = strings.ReplaceAll(s, key[:8], "<key prefix>")
	}
	return s
}

// explainCase is one fabricated upstream failure for the Explain check.
type explainCase struct {
	status     int
	typ, code  string
	retryAfter string
	kind       sdk.ErrorKind // -1: any kind
	retryable  int           // 1 must, 0 must not, -1 either
}

// explainCases are the failures every upstream API produces in some form.
var explainCases = []explainCase{
	{status: 400, typ: "invalid_request_error", code: "invalid_value", kind: sdk.KindInvalidRequest, retryable: 0},
	{status: 401, typ: "invalid_request_error", code: "invalid_api_key", kind: sdk.KindUnauthorized, retryable: 0},
	{status: 429, typ: "requests", code: "rate_limit_exceeded", retryAfter: "2", kind: sdk.KindRateLimited, retryable: 1},
	{status: 500, typ: "server_error", code: "server_error", kind: -1, retryable: 1},
	{status: 503, typ: "server_error", code: "service_unavailable", kind: -1, retryable: 1},
}

// failureBody is an error body that echoes key in the places providers
// put their message.
func failureBody(c explainCase, key string) []byte {
	msg := "Incorrect API key provided: " + key
	body, _ := json.Marshal(map[string]any{
		"error":   map[string]any{"message": msg, "type": c.typ, "code": c.code},
		"detail":  map[string]any{"message": msg, "status": key},
		"message": msg,
	})
	return body
}

// checkExplain feeds Explain fabricated error answers that echo the key:
// each must become an *sdk.Error with the upstream status, the kind and
// retry advice the status means, and no trace of the key.
func (r *runner) checkExplain(t *testing.T) {
	pl := r.mustPlan(t)
	creds := r.cfg.Credentials
	if creds.APIKey == "" {
		creds.APIKey = fakePlanKey
	}
	key := creds.APIKey
	for _, c := range explainCases {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			ctx, cancel := r.callContext(t.Context())
			defer cancel()
			f := &sdk.Failure{
				Status:      c.status,
				Header:      map[string]string{"Content-Type": "application/json"},
				Body:        failureBody(c, key),
				Credentials: creds,
			}
			if c.retryAfter != "" {
				f.Header["Retry-After"] = c.retryAfter
			}
			err := pl.Explain(ctx, f)
			if err == nil {
				t.Fatalf("Explain(%d) returned nil; want an *sdk.Error", c.status)
			}
			msg := err.Error()
			shown := redactKey(msg, key)
			if shown != msg {
				t.Errorf("the explanation of %d shows the API key: %s", c.status, shown)
			}
			var e *sdk.Error
			if !errors.As(err, &e) {
				t.Fatalf("Explain(%d) = %v (%T); want an *sdk.Error", c.status, shown, err)
			}
			if e.UpstreamStatus != c.status {
				t.Errorf("Explain(%d): UpstreamStatus %d", c.status, e.UpstreamStatus)
			}
			if c.kind >= 0 && e.Kind != c.kind {
				t.Errorf("Explain(%d): kind %s (%s); want %s", c.status, e.Kind, shown, c.kind)
			}
			if c.retryable >= 0 && e.Retryable != (c.retryable == 1) {
				t.Errorf("Explain(%d): Retryable %v; want %v", c.status, e.Retryable, c.retryable == 1)
			}
		})
	}
}
