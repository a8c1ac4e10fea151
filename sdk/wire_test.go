package sdk

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// roundTrip encodes m to bytes and back, as the wire does.
func roundTrip[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// requireAllSet fails when some exported field of v (recursively) is its
// zero value: a field added to the sdk types must be added to these fixtures,
// and then to the translation, or this test fails.
func requireAllSet(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			t.Errorf("fixture leaves %s nil", path)
			return
		}
		requireAllSet(t, path, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() {
				requireAllSet(t, path+"."+f.Name, v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("fixture leaves %s empty", path)
		}
		for i := range v.Len() {
			requireAllSet(t, path+"[]", v.Index(i))
		}
	default:
		if v.IsZero() {
			t.Errorf("fixture leaves %s zero", path)
		}
	}
}

func TestWireRoundTrip(t *testing.T) {
	desc := &Description{
		ID: "p", Name: "P", DefaultModel: "m", Plans: true, Transcribes: true,
		Models: []Model{{
			ID: "m", Name: "M",
			Capabilities:  Capabilities{Streaming: true, Timestamps: true, Cloning: true, Speed: true, InputStreaming: true, Instructions: true, Stitching: true},
			OutputFormats: []string{FormatWAV, FormatPCM}, SampleRates: []int{8000, 24000},
			NativeSampleRate: 24000, MaxTextChars: 4096, MinSpeed: 0.5, MaxSpeed: 2,
			AudioTags:       []string{"laughs", AnyAudioTag},
			Encodings:       []Encoding{{Format: FormatMP3, SampleRate: 44100, Bitrate: 128}},
			StreamEncodings: []Encoding{{Format: FormatOpus, SampleRate: 48000, Bitrate: 32}},
			Phonemes:        PhonemeInput{Kind: PhonemesPLS, Alphabets: []string{"ipa", "cmu"}, MaxLexicons: 3},
			Prices: []Price{{Unit: UnitTextTokens, Amount: 0.6, Per: 1_000_000, Currency: "USD", Source: "https://example.com/pricing",
				Date: "2026-11-28", Tokenizer: "o200k_base", TokensPerSecond: 20.8, PerCharacter: 0.5}},
		}},
	}
	cred := Credentials{APIKey: "sk-test", BYOK: true}
	synthReq := &SynthesizeRequest{
		Model: "m", Voice: "v", Text: "hello", Speed: 1.5, Format: FormatWAV, SampleRate: 8000, Bitrate: 64,
		Timestamps: true, Options: []byte(`{"a":1}`), Credentials: cred,
		Neighbours: &Neighbours{PreviousText: "before", NextText: "after", PreviousIDs: []string{"r1", "r2"}},
		Markup:     MarkupSSML,
		Lexicons:   []Lexicon{{ID: "l", Version: "1", Document: []byte("<lexicon/>")}},
	}
	synthResp := &SynthesizeResponse{
		Audio: []byte{1, 2, 3}, MediaType: "audio/wav",
		Timestamps: []WordTimestamp{{Text: "hello", Start: 0.25, End: 0.5}},
		Warnings:   []string{"w"},
		ContextID:  "r3",
		Billed:     []BilledUsage{{Unit: UnitCharacters, Quantity: 5}},
	}
	cloneReq := &CloneRequest{
		Model: "m", Name: "n", Description: "d", Options: []byte(`{}`), Credentials: cred,
		Samples: []Sample{{Filename: "a.wav", MediaType: "audio/wav", Data: []byte{9}}},
	}
	voices := []Voice{{ID: "v", Name: "V", Language: "en", Gender: "female"}}
	event := StreamEvent{MediaType: "audio/pcm;rate=24000", Audio: []byte{1, 2}, Words: []WordTimestamp{{Text: "hi", Start: 0.5, End: 0.75}}, Warning: "w"}
	trReq := &TranscribeRequest{Model: "whisper-1", Audio: []byte{4, 5}, MediaType: "audio/wav", Language: "en", Prompt: "hello", Credentials: cred}
	transcript := &Transcript{Text: "hello", Language: "english", Words: []WordTimestamp{{Text: "hello", Start: 0.1, End: 0.4}}}
	modResult := &ModerationResult{Decision: DecisionBlock, Category: "c", Confidence: 0.5, Detail: "d", Rule: "r"}
	modRules := []ModerationRule{{Name: "no-stock-tips", Prompt: "Block any text that promotes a specific stock"}}

	tests := []struct {
		name string
		in   any
		back func() any
	}{
		{"Description", desc, func() any { return descriptionFromProto(roundTrip(t, descriptionToProto(desc))) }},
		{"SynthesizeRequest", synthReq, func() any { return synthesizeRequestFromProto(roundTrip(t, synthesizeRequestToProto(synthReq))) }},
		{"SynthesizeResponse", synthResp, func() any { return synthesizeResponseFromProto(roundTrip(t, synthesizeResponseToProto(synthResp))) }},
		{"CloneRequest", cloneReq, func() any { return cloneRequestFromProto(roundTrip(t, cloneRequestToProto(cloneReq))) }},
		{"Voices", voices, func() any { return voicesFromProto(roundTrip(t, voicesToProto(voices))) }},
		{"TranscribeRequest", trReq, func() any { return transcribeRequestFromProto(roundTrip(t, transcribeRequestToProto(trReq))) }},
		{"Transcript", transcript, func() any { return transcriptFromProto(roundTrip(t, transcriptToProto(transcript))) }},
		{"ModerationResult", modResult, func() any { return moderationResultFromProto(roundTrip(t, moderationResultToProto(modResult))) }},
		{"StreamEvent", event, func() any { return streamEventFromProto(roundTrip(t, streamEventToProto(&event))) }},
		{"Credentials", cred, func() any { return credentialsFromProto(roundTrip(t, credentialsToProto(cred))) }},
		{"ModerationRules", modRules, func() any {
			return moderationRulesFromProto(roundTrip(t, &pluginpb.ModerationRequest{Rules: moderationRulesToProto(modRules)}).GetRules())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireAllSet(t, tt.name, reflect.ValueOf(tt.in))
			if got := tt.back(); !reflect.DeepEqual(got, tt.in) {
				t.Errorf("round trip changed the value:\n got %#v\nwant %#v", got, tt.in)
			}
		})
	}
}

func TestWireEmptyValues(t *testing.T) {
	// Absent optional parts must come back as nil, as the sdk documents
	// (Options nil when absent, Timestamps nil unless requested).
	req := synthesizeRequestFromProto(roundTrip(t, synthesizeRequestToProto(&SynthesizeRequest{Model: "m"})))
	if req.Options != nil || req.Credentials != (Credentials{}) {
		t.Errorf("empty request came back as %#v", req)
	}
	resp := synthesizeResponseFromProto(roundTrip(t, synthesizeResponseToProto(&SynthesizeResponse{MediaType: "audio/wav"})))
	if resp.Timestamps != nil || resp.Warnings != nil || resp.Audio != nil {
		t.Errorf("empty response came back as %#v", resp)
	}
}

func TestErrorStatusRoundTrip(t *testing.T) {
	live := context.Background()
	tests := []struct {
		name string
		in   error
		want *Error
	}{
		{"full", &Error{Kind: KindRateLimited, Message: "slow down", UpstreamStatus: 429, UpstreamCode: "rate_limit", Retryable: true, RetryAfter: 1500 * time.Millisecond},
			&Error{Kind: KindRateLimited, Message: "slow down", UpstreamStatus: 429, UpstreamCode: "rate_limit", Retryable: true, RetryAfter: 1500 * time.Millisecond}},
		{"an option refused", InvalidOption("voice_settings.speed", "must be between 0.7 and 1.2"),
			&Error{Kind: KindInvalidRequest, Message: "must be between 0.7 and 1.2", Field: "voice_settings.speed"}},
		{"wrapped", fmtWrap(&Error{Kind: KindUnauthorized, Message: "bad key", UpstreamStatus: 401}),
			&Error{Kind: KindUnauthorized, Message: "bad key", UpstreamStatus: 401}},
		{"plain error", errors.New("boom"), &Error{Kind: KindInternal, Message: "boom"}},
		{"plugin's own deadline", context.DeadlineExceeded, &Error{Kind: KindTimeout, Message: "context deadline exceeded", Retryable: true}},
		{"unknown kind", &Error{Kind: 42, Message: "future"}, &Error{Kind: 42, Message: "future"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorFromRPC(live, "Synthesize", errorToStatus(tt.in))
			var e *Error
			if !errors.As(got, &e) {
				t.Fatalf("got %T %v, want *Error", got, got)
			}
			if e.cause != nil {
				t.Errorf("a plugin error must not wrap a local cause, got %v", e.cause)
			}
			if *e != *tt.want {
				t.Errorf("got %#v, want %#v", e, tt.want)
			}
		})
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("context"), err) }

func TestErrorFromRPCLocalFailures(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	live := context.Background()
	tests := []struct {
		name      string
		ctx       context.Context
		err       error
		kind      ErrorKind
		retryable bool
		is        error
	}{
		{"host cancelled", cancelled, status.Error(codes.Canceled, "context canceled"), KindUnavailable, false, context.Canceled},
		{"host deadline", expired, status.Error(codes.DeadlineExceeded, "context deadline exceeded"), KindTimeout, true, context.DeadlineExceeded},
		{"process died", live, status.Error(codes.Unavailable, "error reading from server: EOF"), KindUnavailable, true, nil},
		{"connection closing", live, status.Error(codes.Canceled, "grpc: the client connection is closing"), KindUnavailable, true, nil},
		{"older plugin", live, status.Error(codes.Unimplemented, "unknown method Clone"), KindUnsupported, false, nil},
		{"too large", live, status.Error(codes.ResourceExhausted, "message larger than max"), KindInternal, false, nil},
		{"not a status", live, errors.New("odd"), KindInternal, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorFromRPC(tt.ctx, "Synthesize", tt.err)
			var e *Error
			if !errors.As(got, &e) {
				t.Fatalf("got %T %v, want *Error", got, got)
			}
			if e.Kind != tt.kind || e.Retryable != tt.retryable {
				t.Errorf("got kind %s retryable %v, want %s %v", e.Kind, e.Retryable, tt.kind, tt.retryable)
			}
			if tt.is != nil && !errors.Is(got, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", got, tt.is)
			}
		})
	}
}

// lateTimer is a context whose deadline has passed but whose timer has
// not run yet (Err is still nil), as a host under load sees it.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// TestPluginDeadlineBeforeTheHostsTimer: the plugin's answer to the
// propagated deadline can arrive before the host's own timer has ended
// its context. Past the host's deadline it is that deadline (errors.Is
// says so); before it, a plugin's timeout is its own.
func TestPluginDeadlineBeforeTheHostsTimer(t *testing.T) {
	for _, tt := range []struct {
		name     string
		deadline time.Time
		want     bool
	}{
		{"past the host's deadline", time.Now().Add(-time.Millisecond), true},
		{"before the host's deadline", time.Now().Add(time.Hour), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := lateTimer{context.Background(), tt.deadline}
			got := errorFromRPC(ctx, "Synthesize", errorToStatus(context.DeadlineExceeded))
			var e *Error
			if !errors.As(got, &e) || e.Kind != KindTimeout {
				t.Fatalf("got %T %v, want a KindTimeout *Error", got, got)
			}
			if is := errors.Is(got, context.DeadlineExceeded); is != tt.want {
				t.Errorf("errors.Is(context.DeadlineExceeded) = %v, want %v", is, tt.want)
			}
		})
	}
}
