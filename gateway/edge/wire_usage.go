package edge

import (
	"encoding/json"
	"math"

	"github.com/voxgate/voxgate/gateway/store"
)

// The JSON shapes of GET /v1/usage.

// usageJSON is the body of GET /v1/usage.
type usageJSON struct {
	Since   string   `json:"since"`
	Until   string   `json:"until"`
	GroupBy []string `json:"group_by"`
	// Currency is what the figures' cost is in (pricing.currency).
	Currency string           `json:"currency"`
	Data     []usageGroupJSON `json:"data"`
	Total    usageFiguresJSON `json:"total"`
}

// usageGroupJSON is one group: the fields it is grouped by, then its
// figures.
type usageGroupJSON struct {
	Day       string `json:"day,omitempty"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	KeyName   string `json:"key_name,omitempty"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	usageFiguresJSON
}

// usageFiguresJSON are the figures of a group or of the whole window.
type usageFiguresJSON struct {
	Requests     int64       `json:"requests"`
	Errors       int64       `json:"errors"`
	ServerErrors int64       `json:"server_errors"`
	ErrorRate    float64     `json:"error_rate"`
	Characters   int64       `json:"characters"`
	AudioSeconds float64     `json:"audio_seconds"`
	Credits      int64       `json:"credits"`
	Cost         json.Number `json:"cost"`
	CacheHits    int64       `json:"cache_hits"`
	LatencyMS    latencyJSON `json:"latency_ms"`
}

// latencyJSON summarizes a latency histogram; percentiles are estimates
// to within their bucket (store.LatencyBoundsMS).
type latencyJSON struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

func figures(c *store.UsageCounts) usageFiguresJSON {
	f := usageFiguresJSON{
		Requests: c.Requests, Errors: c.Errors, ServerErrors: c.ServerErrors,
		Characters: c.Characters, AudioSeconds: round3(float64(c.AudioMS) / 1000),
		Credits: c.Credits, Cost: money(c.Cost), CacheHits: c.CacheHits,
	}
	if c.Requests > 0 {
		f.ErrorRate = round4(float64(c.Errors) / float64(c.Requests))
		f.LatencyMS = latencyJSON{
			Mean: round1(float64(c.LatencyMSSum) / float64(c.Requests)),
			P50:  round1(c.LatencyPercentile(0.50)),
			P90:  round1(c.LatencyPercentile(0.90)),
			P95:  round1(c.LatencyPercentile(0.95)),
			P99:  round1(c.LatencyPercentile(0.99)),
		}
	}
	return f
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
func round4(f float64) float64 { return math.Round(f*10000) / 10000 }
