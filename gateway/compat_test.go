package gateway_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// The behaviour docs/compatibility.md promises beyond the spec: the
// hosted service's documented paths, shapes and codes. TestDocExamples
// (docexamples_test.go) runs the documentation's own curl examples.

// TestDocumentedReads: the public health probe, the providers list at the
// documented path and shape, one log row by request id, and the request
// id headers on every kind of response.
func TestDocumentedReads(t *testing.T) {
	tg := startGateway(t, speechConfig)

	// /health needs no key.
	if r := tg.do("GET", "/health", "", nil); r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Errorf("/health = %d %s", r.status, r.body)
	}

	// The documented providers list: flags at the top level, prefixed
	// model strings.
	var providers struct {
		Data []struct {
			ID                     string
			Name                   string
			Enabled, BYOK, Managed bool
			Models                 []string
		}
	}
	tg.do("GET", "/v1/audio/providers", "acme", nil).json(t, &providers)
	got := map[string]int{}
	for i, p := range providers.Data {
		got[p.ID] = i
	}
	es, ok := got["espeak"]
	if !ok || len(providers.Data) != 2 {
		t.Fatalf("providers %+v", providers.Data)
	}
	if p := providers.Data[es]; p.Name == "" || !p.Enabled || p.BYOK || !p.Managed || len(p.Models) != 1 || p.Models[0] != "espeak/espeak-ng" {
		t.Errorf("espeak entry %+v", p)
	}
	tg.do("GET", "/v1/audio/providers", "globex", nil).json(t, &providers)
	if p := providers.Data[got["espeak"]]; p.ID != "espeak" || p.Enabled {
		t.Errorf("globex's espeak entry %+v: not enabled for globex", p)
	}
	tg.do("GET", "/v1/audio/providers?x=1", "acme", nil).problem(t, 400, "validation_failed")
	tg.do("GET", "/v1/audio/providers", "", nil).problem(t, 401, "unauthorized")

	// One log row by request id: a generated one, and a client's own.
	r := tg.do("POST", "/v1/audio/speech", "acme", speechBody("Logged by id."))
	if r.status != 200 {
		t.Fatalf("speech: %d %s", r.status, r.body)
	}
	id := r.header.Get("X-Request-Id")
	if _, err := uuid.Parse(id); err != nil || r.header.Get("X-Speechbase-Request-Id") != id {
		t.Fatalf("request id headers %q / %q", id, r.header.Get("X-Speechbase-Request-Id"))
	}
	mine := "client-chosen-" + uuid.NewString()[:8]
	tg.do("POST", "/v1/audio/speech", "acme", speechBody("x", "voice", "no-such-voice"), "X-Request-Id", mine)
	tg.flushLogs()
	var one struct{ Data apiLogRow }
	tg.do("GET", "/v1/logs/"+id, "acme", nil).json(t, &one)
	if one.Data.RequestID != id || one.Data.Status != 200 || one.Data.Provider != "espeak" || one.Data.CharCount != len("Logged by id.") || one.Data.Path != "/v1/audio/speech" {
		t.Errorf("row %+v", one.Data)
	}
	tg.do("GET", "/v1/logs/"+mine, "acme", nil).json(t, &one)
	if one.Data.RequestID != mine || one.Data.Status < 400 || one.Data.ErrorCode == "" {
		t.Errorf("the failed request's row %+v", one.Data)
	}
	// Another organization's row is 404, like a missing one.
	tg.do("GET", "/v1/logs/"+id, "globex", nil).problem(t, 404, "not_found")
	tg.do("GET", "/v1/logs/"+uuid.NewString(), "acme", nil).problem(t, 404, "not_found")
	p := tg.do("GET", "/v1/logs/"+strings.Repeat("x", 200), "acme", nil).problem(t, 400, "validation_failed")
	if len(p.Validation) != 1 || p.Validation[0].Path[0] != "requestId" {
		t.Errorf("validation %+v", p.Validation)
	}
	tg.do("GET", "/v1/logs/"+id+"?limit=1", "acme", nil).problem(t, 400, "validation_failed")

	// Both request id headers on every response: success, problem,
	// unauthorized, unmatched route, method not allowed.
	for _, rr := range []*response{
		tg.do("GET", "/health", "", nil),
		tg.do("GET", "/v1/voices", "", nil),
		tg.do("GET", "/v1/nothing-here", "acme", nil),
		tg.do("PATCH", "/v1/logs", "acme", nil),
		tg.do("GET", "/v1/logs/"+id, "acme", nil),
	} {
		h := rr.header.Get("X-Request-Id")
		if h == "" || rr.header.Get("X-Speechbase-Request-Id") != h {
			t.Errorf("status %d: X-Request-Id %q, X-Speechbase-Request-Id %q", rr.status, h, rr.header.Get("X-Speechbase-Request-Id"))
		}
	}
}
