package main

import (
	"slices"
	"time"
)

// latency summarizes a sample of durations, in milliseconds.
type latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// summarize returns the percentiles of ds (nearest rank).
func summarize(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return latency{
		N:    len(s),
		P50:  ms(percentile(s, 50)),
		P90:  ms(percentile(s, 90)),
		P99:  ms(percentile(s, 99)),
		Max:  ms(s[len(s)-1]),
		Mean: ms(sum / time.Duration(len(s))),
	}
}

// percentile returns the nearest-rank p-th percentile of sorted s.
func percentile(s []time.Duration, p float64) time.Duration {
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
