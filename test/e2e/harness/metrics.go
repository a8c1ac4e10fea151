package harness

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/voxgate/voxgate/gateway"
)

// Sample is one series of a scrape: its name (NAME_sum and NAME_count for
// a histogram), its labels, and its value.
type Sample struct {
	Name   string
	labels map[string]string
	Value  float64
}

// Scrape reads the gateway's metrics as Prometheus does.
func (tg *Gateway) Scrape() []Sample {
	tg.t.Helper()
	return ParseMetrics(tg.t, tg.MetricsBody())
}

// MetricsBody is a scrape of /metrics, from the admin socket (where it is
// served whatever the config says).
func (tg *Gateway) MetricsBody() []byte {
	tg.t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", gateway.AdminSocket(tg.Config))
		},
	}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://admin/metrics")
	if err != nil {
		tg.t.Fatalf("/metrics on the admin socket: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		tg.t.Fatalf("/metrics on the admin socket: %d %v %s", resp.StatusCode, err, b)
	}
	return b
}

// ParseMetrics parses a Prometheus text exposition into its samples.
func ParseMetrics(t testing.TB, body []byte) []Sample {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse metrics: %v\n%s", err, body)
	}
	var out []Sample
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(n string, v float64) { out = append(out, Sample{n, labels, v}) }
			switch {
			case m.GetCounter() != nil:
				add(name, m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				add(name, m.GetGauge().GetValue())
			case m.GetHistogram() != nil:
				add(name+"_sum", m.GetHistogram().GetSampleSum())
				add(name+"_count", float64(m.GetHistogram().GetSampleCount()))
			}
		}
	}
	return out
}

// SampleValue returns the series name{labels...} (pairs of label and value; the
// series may carry more labels) and whether it is there.
func SampleValue(samples []Sample, name string, labels ...string) (float64, bool) {
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				ok = false
				break
			}
		}
		if ok {
			return s.Value, true
		}
	}
	return 0, false
}

// MustSample returns the series' value, failing the test when it is missing.
func MustSample(t testing.TB, samples []Sample, name string, labels ...string) float64 {
	t.Helper()
	v, ok := SampleValue(samples, name, labels...)
	if !ok {
		var names []string
		for _, s := range samples {
			if strings.HasPrefix(s.Name, "voxgate_") {
				names = append(names, s.Name)
			}
		}
		sort.Strings(names)
		t.Fatalf("no series %s%v; voxgate series: %v", name, labels, names)
	}
	return v
}

// MetricValue is the value of the series name with exactly the labels
// given as pairs (none: the unlabelled series) in a scrape.
func (tg *Gateway) MetricValue(name string, labels ...string) float64 {
	tg.t.Helper()
next:
	for _, s := range tg.Scrape() {
		if s.Name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return s.Value
	}
	tg.t.Fatalf("no series %s%v", name, labels)
	return 0
}

// Grep returns the lines of s that contain sub: the series of a scrape
// that a failing test shows.
func Grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
