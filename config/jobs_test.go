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
		value string
		want  time.Duration
		err   string
	}{
		{"", 30 * 24 * time.Hour, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"0.5d", 12 * time.Hour, ""},
		{"90s", 90 * time.Second, ""},
		{"off", 0, ""},
		{"0d", 0, "is not a number of days"},
		{"week", 0, "is not a positive duration"},
		{"500ms", 0, "jobs.retention: must be at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			y := minimal
			if tt.value != "" {
				y += "jobs:\n  retention: " + tt.value + "\n"
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
