package gateway

import (
	"reflect"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/config"
)

// reloadBase is a config with a value in the sections a reload swaps and
// in those it refuses to change.
const reloadBase = `
server:
  listen: 127.0.0.1:8080
  request_timeout: 60s
storage:
  path: data/v.db
shared:
  redis_url: redis://127.0.0.1:6379
metrics:
  token: secret-token-value
secrets:
  key_env: VOXGATE_TEST_KEY
cache:
  driver: disk
  ttl: 1h
limits:
  max_text_chars: 4000
  max_media_bytes: 1000000
providers:
  espeak:
    plugin: voxgate-espeak
    managed: true
orgs:
  acme:
    rate_limit: 5
    providers:
      espeak: {enabled: true}
aliases:
  models:
    tts-1: espeak
`

func parseReload(t *testing.T, edit func(string) string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(edit(reloadBase)), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRestartOnly: a setting a reload cannot apply is named (never its
// value), and one it can apply is not.
func TestRestartOnly(t *testing.T) {
	same := func(s string) string { return s }
	for _, tc := range []struct {
		name string
		edit func(string) string
		want []string // the settings named; nil: the reload may go on
	}{
		{"nothing", same, nil},
		{"listen", func(s string) string { return strings.Replace(s, "127.0.0.1:8080", "127.0.0.1:9090", 1) }, []string{"server.listen"}},
		{"request timeout", func(s string) string { return strings.Replace(s, "60s", "90s", 1) }, []string{"server.request_timeout"}},
		{"storage path", func(s string) string { return strings.Replace(s, "data/v.db", "data/w.db", 1) }, []string{"storage.path"}},
		{"storage driver", func(s string) string {
			return strings.Replace(s, "  path: data/v.db", "  driver: postgres\n  dsn: postgres://u:p@h/db", 1)
		}, []string{"storage.driver", "storage.dsn", "storage.path"}},
		{"redis", func(s string) string { return strings.Replace(s, ":6379", ":6380", 1) }, []string{"shared.redis_url"}},
		{"secrets key source", func(s string) string { return strings.Replace(s, "VOXGATE_TEST_KEY", "OTHER_KEY", 1) }, []string{"secrets.key_env"}},
		{"metrics token", func(s string) string { return strings.Replace(s, "secret-token-value", "another-token-value", 1) }, []string{"metrics.token"}},
		{"cache driver", func(s string) string { return strings.Replace(s, "driver: disk", "driver: \"off\"", 1) }, []string{"cache.driver"}},
		{"media bytes", func(s string) string { return strings.Replace(s, "1000000", "2000000", 1) }, []string{"limits.max_media_bytes"}},
		{"reloadable", func(s string) string {
			s = strings.Replace(s, "ttl: 1h", "ttl: 2h", 1)
			s = strings.Replace(s, "max_text_chars: 4000", "max_text_chars: 3000", 1)
			s = strings.Replace(s, "rate_limit: 5", "rate_limit: 7", 1)
			s = strings.Replace(s, "tts-1: espeak", "tts-1: espeak/espeak", 1)
			return strings.Replace(s, "orgs:\n", "orgs:\n  globex: {}\n", 1)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := restartOnly(parseReload(t, same), parseReload(t, tc.edit))
			var got []string
			for _, err := range errs {
				key, _, _ := strings.Cut(err.Error(), ":")
				got = append(got, key)
				for _, secret := range []string{"secret-token-value", "another-token-value", "postgres://", "6379", "6380"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the refusal shows a value: %v", err)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("refused %v, want %v (%v)", got, tc.want, errs)
			}
		})
	}
}

// TestDescribeChanges: the reload's log line names what was added,
// removed and changed.
func TestDescribeChanges(t *testing.T) {
	old := parseReload(t, func(s string) string { return s })
	cfg := parseReload(t, func(s string) string {
		s = strings.Replace(s, "rate_limit: 5", "rate_limit: 7", 1)
		s = strings.Replace(s, "orgs:\n", "orgs:\n  globex: {}\n", 1)
		return strings.Replace(s, "tts-1: espeak", "tts-1: espeak/espeak", 1)
	})
	got := describeChanges(old, cfg, nil, nil)
	want := []string{"orgs +globex ~acme", "aliases changed"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if got := describeChanges(old, old, nil, nil); len(got) != 0 {
		t.Errorf("no change described as %q", got)
	}
}
