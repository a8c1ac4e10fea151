package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/storetest"
)

// The suite is tested the only way that shows it can fail: it runs, in a
// child process of this test binary, against a real bbolt backend wrapped
// so that it breaks one rule, and the child must report the case that
// checks that rule as failed. "none" is the control: the unbroken backend
// passes.

const brokenEnv = "STORETEST_BROKEN"

// broken is a bbolt backend that breaks the rule mode names.
type broken struct {
	*bolt.Store
	mode string
}

func (b *broken) ListVoices(ctx context.Context, org string, limit int, after store.Position) ([]store.Voice, store.Position, bool, error) {
	if b.mode == "ignore-position" {
		after = nil
	}
	return b.Store.ListVoices(ctx, org, limit, after)
}

func (b *broken) GetVoice(ctx context.Context, org, id string) (*store.Voice, error) {
	if b.mode == "leak-voice" {
		for _, other := range []string{"o1", "o2", "org-a", "org-b"} {
			if v, err := b.Store.GetVoice(ctx, other, id); err == nil {
				return v, nil
			}
		}
	}
	return b.Store.GetVoice(ctx, org, id)
}

func (b *broken) ListLogs(ctx context.Context, org string, f store.LogFilter, limit int, after store.Position) ([]store.LogRow, store.Position, bool, error) {
	if b.mode == "ignore-status" {
		f.Status = 0
	}
	return b.Store.ListLogs(ctx, org, f, limit, after)
}

func (b *broken) AppendLogs(ctx context.Context, rows []store.LogRow) error {
	if b.mode == "untyped-text-error" {
		// What a driver error passed on as it is looks like: the text
		// refused, but nothing a caller could tell from a failure.
		if err := b.Store.AppendLogs(ctx, rows); err != nil {
			return errors.New(err.Error())
		}
		return nil
	}
	if b.mode == "partial-batch" {
		var ok []store.LogRow
		for _, r := range rows {
			if r.OrgID != "" {
				ok = append(ok, r)
			}
		}
		rows = ok
	}
	return b.Store.AppendLogs(ctx, rows)
}

func (b *broken) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	if b.mode == "no-revoke" {
		return nil, nil
	}
	return b.Store.RevokeKey(ctx, id)
}

func TestBrokenBackend(t *testing.T) {
	mode := os.Getenv(brokenEnv)
	if mode == "" {
		t.Skip("run by TestSuiteCatchesBrokenBackends in a child process")
	}
	storetest.Run(t, func(t *testing.T, opts store.Options) store.Backend {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return &broken{Store: s, mode: mode}
	})
}

func TestSuiteCatchesBrokenBackends(t *testing.T) {
	for _, c := range []struct {
		mode string
		fail string // the case that must fail; "" means none may
	}{
		{"none", ""},
		{"ignore-position", "ListVoicesPagination"},
		{"leak-voice", "VoiceCRUD"},
		{"ignore-status", "ListLogsFilters"},
		{"partial-batch", "AppendLogsValidation"},
		{"no-revoke", "Keys"},
		{"untyped-text-error", "LogRowInvalidText"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			// The control runs the whole suite; a broken backend only
			// the case that must catch it (the suite takes 20 s under
			// the race detector, and the other cases have nothing to
			// say about a rule they do not check).
			run := "-test.run=^TestBrokenBackend$"
			if c.fail != "" {
				run += "/^" + c.fail + "$"
			}
			cmd := exec.Command(os.Args[0], run, "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+c.mode)
			out, err := cmd.CombinedOutput()
			if c.fail == "" {
				if err != nil {
					t.Fatalf("the unbroken backend failed:\n%s", out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), "--- FAIL: TestBrokenBackend/"+c.fail) {
				t.Fatalf("mode %s: case %s did not fail:\n%.3000s", c.mode, c.fail, out)
			}
		})
	}
}
