package jobs

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// TestWebhookWarnings: the webhook's body carries the job's warnings as
// the job resource does: a file quieter than its loudness target (the
// fake voice's square wave under a ceiling of -9 dBTP cannot reach -5
// LUFS) delivers its warning, a file at its target and a failed job
// deliver [] (present, not null or left out). The signature, computed
// here and not with Sign, verifies over the body with them.
func TestWebhookWarnings(t *testing.T) {
	const secret = "whsec_test_0123456789abcdef"
	for _, tc := range []struct {
		name     string
		spec     Spec
		fail     bool
		state    string
		warnings bool // the job has a warning
	}{
		{"quieter than its target", Spec{Format: "opus", Loudness: &Loudness{Integrated: -5, TruePeak: -9}}, false, store.JobSucceeded, true},
		{"at its target", Spec{Format: "wav", Loudness: &Loudness{Integrated: -24, TruePeak: -1}}, false, store.JobSucceeded, false},
		{"failed", Spec{Format: "wav"}, true, store.JobFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies [][]byte
			var sigs []string
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, b)
				sigs = append(sigs, r.Header.Get(HeaderSignature))
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			}))
			defer recv.Close()
			sp := &fakeSpeaker{}
			if tc.fail {
				sp.fail = func(int, string) error { return problem.New(problem.ProviderUnavailable, "down") }
			}
			s, st, _ := newTestService(t, sp)
			spec := tc.spec
			spec.Webhook = &Webhook{URL: recv.URL + "/hook", Secret: secret}
			j := create(t, s, sp, threeChapters, spec)
			j = runUntil(t, s, st, j.ID, func(j *store.Job) bool { return len(j.Deliveries) > 0 })
			if j.State != tc.state || (len(j.Warnings) > 0) != tc.warnings {
				t.Fatalf("job %s with warnings %q, want %s with warnings %v", j.State, j.Warnings, tc.state, tc.warnings)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 1 || j.Deliveries[0].Status != http.StatusNoContent {
				t.Fatalf("%d deliveries received, recorded %+v", len(bodies), j.Deliveries)
			}
			body := bodies[0]
			m := regexp.MustCompile(`^t=(\d+),v1=([0-9a-f]{64})$`).FindStringSubmatch(sigs[0])
			if m == nil {
				t.Fatalf("signature %q", sigs[0])
			}
			mac := hmac.New(sha256.New, []byte(secret))
			fmt.Fprintf(mac, "%s.%s", m[1], body)
			if !hmac.Equal([]byte(m[2]), []byte(hex.EncodeToString(mac.Sum(nil)))) {
				t.Error("the signature does not verify")
			}
			var ev struct {
				Data map[string]json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			raw, ok := ev.Data["warnings"]
			if !ok {
				t.Fatalf("the body has no warnings: %s", body)
			}
			if !tc.warnings {
				if !bytes.Equal(raw, []byte("[]")) {
					t.Errorf("warnings %s of a job with none, want []", raw)
				}
				return
			}
			var got []string
			if err := json.Unmarshal(raw, &got); err != nil || !slices.Equal(got, j.Warnings) {
				t.Errorf("the body's warnings %s (%v), the job's %q", raw, err, j.Warnings)
			}
		})
	}
}
