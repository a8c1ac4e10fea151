package fakeupstream

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// PassThrough checks a cloud plugin's sdk.AnyModel entry against its
// fake (CheckPassThrough). Every cloud plugin has one, so the check is
// written once here rather than once per plugin.
type PassThrough struct {
	// Fake is the fake the plugin calls. It must have been started with
	// Request.Model in Options.NewModels: a model the provider has and
	// neither the fake nor the plugin lists.
	Fake *Control
	// Request asks for speech from that model: configured credentials,
	// a voice every model of the provider takes, some text.
	Request sdk.SynthesizeRequest
	// SentModel reads the model id from a request the fake received,
	// wherever the provider takes it (a body field, the path, the
	// query); "" for a request that names no model (a download).
	SentModel func(Request) string
	// Invalid are ids that cannot be the provider's: each must be
	// refused as the caller's mistake, naming the id, without a call.
	Invalid []string
}

// CheckPassThrough runs c against p, a plugin configured to call c.Fake
// (started as its own process, as the gateway runs it): the plugin
// describes an sdk.AnyModel entry and does not list c.Request.Model; the
// unlisted id synthesizes audio that decodes, and every request the fake
// saw names that id exactly as it was written; each of c.Invalid is
// refused with sdk.KindInvalidRequest, naming the id, and the fake
// receives nothing.
func CheckPassThrough(t *testing.T, p sdk.Provider, c PassThrough) {
	t.Helper()
	d, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d.Models, func(m sdk.Model) bool { return m.ID == sdk.AnyModel }) {
		t.Errorf("%s describes no sdk.AnyModel entry", d.ID)
	}
	if slices.ContainsFunc(d.Models, func(m sdk.Model) bool { return m.ID == c.Request.Model }) {
		t.Fatalf("%s lists %q: name a model it does not list", d.ID, c.Request.Model)
	}

	c.Fake.Reset()
	req := c.Request
	resp, err := p.Synthesize(t.Context(), &req)
	if err != nil {
		t.Fatalf("Synthesize(model %q): %v", req.Model, err)
	}
	if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil {
		t.Errorf("Synthesize(model %q): the %s answer does not decode: %v", req.Model, resp.MediaType, err)
	}
	named := 0
	for _, r := range c.Fake.Requests() {
		switch got := c.SentModel(r); got {
		case "":
		case req.Model:
			named++
		default:
			t.Errorf("%s %s named model %q, not %q", r.Method, r.Path, got, req.Model)
		}
	}
	if named == 0 {
		t.Errorf("no request to the fake named model %q (%d requests)", req.Model, c.Fake.Calls())
	}

	c.Fake.Reset()
	for _, id := range c.Invalid {
		req := c.Request
		req.Model = id
		_, err := p.Synthesize(t.Context(), &req)
		var e *sdk.Error
		if !errors.As(err, &e) || e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, strconv.Quote(id)) {
			t.Errorf("Synthesize(model %q): %v; want an invalid request naming the model", id, err)
		}
	}
	if n := c.Fake.Calls(); n != 0 {
		t.Errorf("%d calls to the fake for model ids that cannot be the provider's", n)
	}
}

// BodyField is a PassThrough.SentModel for the providers that name the
// model in a top-level string field of a JSON body.
func BodyField(name string) func(Request) string {
	return func(r Request) string {
		var b map[string]any
		_ = r.JSON(&b)
		s, _ := b[name].(string)
		return s
	}
}
