package resources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// testPlugin is the gateway's test plugin (internal/testplugin), built
// once by TestMain; every test talks to it as a real process through
// go-plugin: provider "testkit", models "test" (cloning) and "basic" (no
// cloning), voices "alpha" and "beta", and "clone-NAME" once cloned.
var testPlugin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "voxgate-resources-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPlugin, err = sdktest.BuildPlugin(context.Background(), "github.com/voxgate/voxgate/internal/testplugin", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// policy: acme may use testkit and bring its own key, globex may not
// use it, initech uses it without its own key.
func policy() *credentials.Policy {
	return credentials.NewPolicy(map[string]credentials.Provider{"testkit": {Managed: true}},
		map[string]map[string]credentials.OrgAccess{
			"acme":    {"testkit": {Enabled: true, BYOK: true}},
			"globex":  {"testkit": {Enabled: false}},
			"initech": {"testkit": {Enabled: true}},
		})
}

// fixture is a Service over a real bbolt file and the test plugin.
type fixture struct {
	s     *Service
	store *bolt.Store
	// calls is the plugin's call log.
	calls string
}

// newFixture starts the plugin and opens a store in a temporary
// directory.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pl := sdktest.StartPlugin(t, testPlugin)
	calls := filepath.Join(t.TempDir(), "calls.jsonl")
	if err := pl.Configure(t.Context(), map[string]string{"call_log": calls}); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(t.Context(), map[string]catalog.Policy{"testkit": {Timeout: 10 * time.Second}},
		map[string]sdk.Provider{"testkit": pl}, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := credentials.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Deps{Store: st, Catalog: cat, Credentials: credentials.NewResolver(policy(), st, sealer),
		CheckRule: speech.ValidateStoredRule})
	return &fixture{s: s, store: st, calls: calls}
}

// count returns how many calls of method the plugin received.
func (f *fixture) count(t *testing.T, method string) int {
	t.Helper()
	n, err := calllog.Count(f.calls, method)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wav is a second of a quiet tone as a WAV file.
func wav(t *testing.T) []byte {
	t.Helper()
	c := &audio.Clip{Rate: 16000, Samples: make([]float32, 16000)}
	for i := range c.Samples {
		c.Samples[i] = float32(0.1 * float64(i%40) / 40)
	}
	data, _, err := audio.Encode(c, audio.Output{Format: audio.FormatWAV})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantCode checks that err is a problem with code (nil code: no error).
func wantCode(t *testing.T, err error, code problem.Code) *problem.Error {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return nil
	}
	var pe *problem.Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %v (%T), want a problem %s", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("got problem %s (%s), want %s", pe.Code, pe.Detail, code)
	}
	return pe
}
