package sdktest

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// Answer is what a provider must answer to a failing call: the fields of
// the *sdk.Error the gateway acts on.
type Answer struct {
	Kind sdk.ErrorKind
	// Status and Code are the error's UpstreamStatus and UpstreamCode:
	// 0 and "" when the provider was not asked (or said nothing).
	Status int
	Code   string
	// Retryable and RetryAfter decide whether and when the gateway
	// retries elsewhere.
	Retryable  bool
	RetryAfter time.Duration
	// MessageHas is a part of the message the error must contain; ""
	// checks nothing.
	MessageHas string
}

// Check fails the test unless err is an *sdk.Error matching a in every
// field, and showing neither key nor its first eight characters (a key
// echoed back by the provider, whole or cut short, must not reach a log).
func (a Answer) Check(tb testing.TB, err error, key string) *sdk.Error {
	tb.Helper()
	e := AsError(tb, err)
	if e.Kind != a.Kind || e.UpstreamStatus != a.Status || e.UpstreamCode != a.Code || e.Retryable != a.Retryable || e.RetryAfter != a.RetryAfter {
		tb.Errorf("got %+v; want kind %s, status %d, code %q, retryable %v, retry after %v", e, a.Kind, a.Status, a.Code, a.Retryable, a.RetryAfter)
	}
	if !strings.Contains(e.Message, a.MessageHas) {
		tb.Errorf("message %q lacks %q", e.Message, a.MessageHas)
	}
	if key != "" && (strings.Contains(e.Error(), key) || len(key) >= 8 && strings.Contains(e.Error(), key[:8])) {
		tb.Errorf("the error %q shows the API key", e.Error())
	}
	return e
}

// Op is the provider call a FailureCase makes.
type Op string

// The calls a FailureCase can make.
const (
	// OpSynthesize calls Synthesize; success needs audio that decodes.
	OpSynthesize Op = ""
	// OpTimestamps calls Synthesize asking for word timestamps.
	OpTimestamps Op = "timestamps"
	// OpStream calls Stream; success needs some audio.
	OpStream Op = "stream"
	// OpClone calls Clone; success needs a voice id.
	OpClone Op = "clone"
	// OpVoices calls Voices with the case's key.
	OpVoices Op = "voices"
)

// FailureCase is one row of a provider's upstream-failure table: how the
// fake (of type F) misbehaves, the call made, and what the provider must
// answer. The rows are the plugin's data; Failures.Run is the loop they
// all share.
type FailureCase[F any] struct {
	Name string
	// Key is the API key the call carries ("" for none). The error must
	// not show it.
	Key string
	Op  Op
	// Voice and Model, when set, replace the request's; Options, when
	// set, are its providerOptions.
	Voice, Model string
	Options      []byte
	// Settings are added to the provider's settings for this case.
	Settings map[string]string
	// Setup arranges the fake's failures before the call.
	Setup func(F)
	// Context, when set, derives the call's context (a caller's deadline).
	Context func(context.Context) (context.Context, context.CancelFunc)
	// Path is the upstream path whose calls are counted (empty means
	// Failures.Path), and Calls how many it must see: retries show here.
	Path  string
	Calls int
	// Want is the error the call must end with; nil means it succeeds.
	Want *Answer
}

// CallCounter is the part of a fake upstream Failures needs:
// fakeupstream's servers all count their calls by path.
type CallCounter interface {
	CallsTo(path string) int
}

// Failures is how a plugin's upstream-failure cases are run: a fresh fake
// and provider for each, so that one case's injected faults and retries
// never reach the next.
type Failures[F CallCounter] struct {
	// Fake starts the fake upstream for one case.
	Fake func(t *testing.T) F
	// Provider returns a provider configured against fake with settings
	// (the case's, maybe nil) on top of its own.
	Provider func(t *testing.T, fake F, settings map[string]string) sdk.Provider
	// Request builds the synthesis request carrying key.
	Request func(key string) *sdk.SynthesizeRequest
	// Clone builds the clone request carrying key; needed only for
	// OpClone cases.
	Clone func(key string) *sdk.CloneRequest
	// Path is the path counted for cases that name none.
	Path string
	// Check, when set, checks every error answer further (what the
	// provider's own rules add, e.g. a message prefix).
	Check func(t *testing.T, e *sdk.Error)
}

// Run runs each case as a subtest: the fake, its Setup, the provider with
// the case's Settings, the call, then the calls counted at the case's Path
// and the answer: a decodable result, or an error matching Want that
// does not show the key.
func (f Failures[F]) Run(t *testing.T, cases []FailureCase[F]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			fake := f.Fake(t)
			if tc.Setup != nil {
				tc.Setup(fake)
			}
			p := f.Provider(t, fake, tc.Settings)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.Context != nil {
				ctx, cancel = tc.Context(t.Context())
			}
			defer cancel()
			err := f.call(t, ctx, p, tc)
			path := cmp.Or(tc.Path, f.Path)
			if got := fake.CallsTo(path); got != tc.Calls {
				t.Errorf("%d calls to %s, want %d", got, path, tc.Calls)
			}
			if tc.Want == nil {
				if err != nil {
					t.Fatalf("%s: %v", cmp.Or(string(tc.Op), "synthesize"), err)
				}
				return
			}
			e := tc.Want.Check(t, err, tc.Key)
			if f.Check != nil {
				f.Check(t, e)
			}
		})
	}
}

// call makes tc's call and checks what a success must carry.
func (f Failures[F]) call(t *testing.T, ctx context.Context, p sdk.Provider, tc FailureCase[F]) error {
	t.Helper()
	switch tc.Op {
	case OpClone:
		resp, err := p.Clone(ctx, f.Clone(tc.Key))
		if err == nil && resp.VoiceID == "" {
			t.Error("the clone has no voice id")
		}
		return err
	case OpVoices:
		_, err := p.Voices(ctx, &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: tc.Key}})
		return err
	}
	req := f.Request(tc.Key)
	req.Voice = cmp.Or(tc.Voice, req.Voice)
	req.Model = cmp.Or(tc.Model, req.Model)
	if tc.Options != nil {
		req.Options = tc.Options
	}
	switch tc.Op {
	case OpStream:
		var audio int
		err := p.Stream(ctx, req, func(c sdk.Chunk) error { audio += len(c.Data); return nil })
		if err == nil && audio == 0 {
			t.Error("the stream carried no audio")
		}
		return err
	case OpSynthesize, OpTimestamps:
		req.Timestamps = tc.Op == OpTimestamps
		resp, err := p.Synthesize(ctx, req)
		if err == nil {
			if _, derr := Decode(resp.MediaType, resp.Audio); derr != nil {
				t.Errorf("audio does not decode: %v", derr)
			}
		}
		return err
	}
	t.Fatalf("unknown op %q", tc.Op)
	return nil
}
