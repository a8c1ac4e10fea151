package config

import (
	"strings"
	"testing"
	"time"
)

// TestJobsRetention: jobs.retention takes days, Go durations and off,
// and defaults to 30 days.
func TestJobsRetention(t *testing.T) {
	tests := []struct {
		value    string
		retryFor string // jobs.webhook_retry_for, when set
		want     time.Duration
		err      string
	}{
		{"", "", 30 * 24 * time.Hour, ""},
		{"7d", "", 7 * 24 * time.Hour, ""},
		{"0.5d", "12h", 12 * time.Hour, ""},
		{"90s", "1m", 90 * time.Second, ""},
		{"off", "", 0, ""},
		{"off", "720h", 0, ""},
		{"1d", "", 24 * time.Hour, ""}, // as long as the default webhook_retry_for
		{"0d", "", 0, "is not a number of days"},
		{"week", "", 0, "is not a positive duration"},
		{"500ms", "", 0, "jobs.retention: must be at least 1s"},
		// Shorter than the webhook's retries: the job would be swept
		// while its webhook is still retried.
		{"12h", "", 0, "jobs.retention: 12h0m0s is shorter than jobs.webhook_retry_for (24h0m0s)"},
		{"90s", "2m", 0, "jobs.retention: 1m30s is shorter than jobs.webhook_retry_for (2m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.value+"/"+tt.retryFor, func(t *testing.T) {
			y := minimal
			if tt.value != "" || tt.retryFor != "" {
				y += "jobs:\n"
			}
			if tt.value != "" {
				y += "  retention: " + tt.value + "\n"
			}
			if tt.retryFor != "" {
				y += "  webhook_retry_for: " + tt.retryFor + "\n"
			}
			cfg, err := Parse([]byte(y), env(nil))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Jobs.Retention.D(); got != tt.want {
				t.Errorf("retention %v, want %v", got, tt.want)
			}
		})
	}
}

// TestJobsDirSweep: jobs.dir_sweep defaults to a minute (0 too) whatever
// the retention, and may not be negative.
func TestJobsDirSweep(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want time.Duration
		err  string
	}{
		{"", time.Minute, ""},
		{"jobs:\n  retention: off\n", time.Minute, ""},
		{"jobs:\n  retention: off\n  dir_sweep: 10s\n", 10 * time.Second, ""},
		{"jobs:\n  dir_sweep: 0s\n", time.Minute, ""},
		{"jobs:\n  dir_sweep: -1s\n", 0, "jobs.dir_sweep: duration \"-1s\" must not be negative"},
	} {
		cfg, err := Parse([]byte(minimal+tt.yaml), env(nil))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := cfg.Jobs.DirSweep.D(); got != tt.want {
			t.Errorf("%q: dir_sweep %v, want %v", tt.yaml, got, tt.want)
		}
	}
}
