package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/store"
)

// Webhooks. When a job succeeds or fails and its request named a webhook,
// the job's record gets a due time (store.Job.WebhookDue) and any
// instance's worker leases it when due, POSTs the event and records the
// attempt on the job; a failed attempt is tried again with exponential
// backoff (from jobs.webhook_backoff, doubling, at most an hour apart)
// until jobs.webhook_retry_for (a day) after the job ended.
//
// Each POST carries
//
//	Content-Type: application/json
//	Voxgate-Event: job.succeeded | job.failed
//	Voxgate-Delivery: a uuid, new for every attempt
//	Voxgate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// and the receiver checks the signature with the secret it gave in the
// job's request, and refuses a t too far from its clock (replays). See
// docs/jobs.md for a verification example.

// Webhook header names.
const (
	HeaderSignature = "Voxgate-Signature"
	HeaderEvent     = "Voxgate-Event"
	HeaderDelivery  = "Voxgate-Delivery"
)

// Webhook events.
const (
	EventSucceeded = "job.succeeded"
	EventFailed    = "job.failed"
)

// Sign returns the Voxgate-Signature value of body sent at t with secret.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// event is the webhook's JSON body.
type event struct {
	Type string    `json:"type"`
	At   time.Time `json:"created_at"`
	Data eventJob  `json:"data"`
}

type eventJob struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	ChunksDone  int    `json:"chunks_done"`
	ChunksTotal int    `json:"chunks_total"`
	Characters  int64  `json:"characters"`
	Credits     int64  `json:"credits"`
	DurationMS  int64  `json:"duration_ms"`
	Error       string `json:"error,omitempty"`
	ErrorDetail string `json:"error_detail,omitempty"`
	// Warnings are the job's (store.Job.Warnings: where the finished
	// file is not what the job asked for, such as a file quieter than
	// its loudness target), as the job resource has them: always
	// present, [] when none, never null or left out (no omitempty), so
	// a receiver can rely on the field and read the body and the job
	// alike. They are part of the body, so the signature covers them.
	Warnings []string `json:"warnings"`
}

// guard keeps webhook deliveries away from addresses inside the
// deployment (server-side request forgery): loopback, private, link-local
// (cloud metadata), unspecified and multicast addresses are refused unless
// jobs.webhook_allow_private says otherwise, both when the URL is given
// (its literal address, or its name's addresses) and when a delivery
// connects (the address actually dialled, so a name that resolves
// differently later is caught too).
type guard struct {
	allowPrivate bool
}

// forbidden reports whether ip may not be dialled.
func (g guard) forbidden(ip netip.Addr) bool {
	if g.allowPrivate {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(ip) // carrier-grade NAT, often internal
}

// checkHost returns why host cannot be a webhook's, or "".
func (g guard) checkHost(host string) string {
	if g.allowPrivate {
		return ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if g.forbidden(ip) {
			return "must not be a loopback, private or link-local address (jobs.webhook_allow_private allows them)"
		}
		return ""
	}
	if host == "localhost" {
		return "must not be a loopback, private or link-local address (jobs.webhook_allow_private allows them)"
	}
	return ""
}

// control refuses, at connect time, a forbidden address.
func (g guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if g.forbidden(ap.Addr()) {
		return fmt.Errorf("webhook address %s is loopback, private or link-local (jobs.webhook_allow_private allows it)", ap.Addr())
	}
	return nil
}

// client is the HTTP client of deliveries: the guard on every dial, no
// redirects followed (a redirect could lead inside), a short timeout.
func (g guard) client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: g.control}
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil, MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// deliver makes one webhook attempt for finished job j and records it,
// with the next due time when it failed and the day is not over.
func (s *Service) deliver(ctx context.Context, j *store.Job) {
	spec, err := decodeSpec(j.Spec)
	ev := EventSucceeded
	if j.State != store.JobSucceeded {
		ev = EventFailed
	}
	d := store.JobDelivery{At: s.now().UTC(), Event: ev}
	if err != nil || spec.Webhook == nil {
		d.Error = "the job has no webhook"
		_ = s.store.RecordJobDelivery(ctx, j.ID, s.opts.Owner, d, time.Time{})
		return
	}
	warnings := j.Warnings
	if warnings == nil {
		warnings = []string{} // [], not null: see eventJob.Warnings
	}
	body, _ := json.Marshal(event{Type: ev, At: j.FinishedAt, Data: eventJob{ID: j.ID, State: j.State, ChunksDone: j.ChunksDone,
		ChunksTotal: j.ChunksTotal, Characters: j.Characters, Credits: j.Credits, DurationMS: j.AudioMS, Error: j.ErrorCode, ErrorDetail: j.ErrorDetail,
		Warnings: warnings}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.Webhook.URL, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "voxgate-webhook")
		req.Header.Set(HeaderEvent, ev)
		req.Header.Set(HeaderDelivery, uuid.NewString())
		req.Header.Set(HeaderSignature, Sign(spec.Webhook.Secret, d.At, body))
		var resp *http.Response
		resp, err = s.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			d.Status = resp.StatusCode
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		}
	}
	var next time.Time
	if err != nil {
		d.Error = err.Error()
		if len(d.Error) > 300 {
			d.Error = d.Error[:300]
		}
		d.Error = store.SanitizeText(d.Error)
		failed := 0
		for _, p := range j.Deliveries {
			if p.Error != "" {
				failed++
			}
		}
		wait := s.opts.WebhookBackoff << min(failed, 20)
		wait = min(wait, time.Hour)
		if at := d.At.Add(wait); at.Before(j.FinishedAt.Add(s.opts.WebhookRetryFor)) {
			next = at
		}
	}
	if err := s.store.RecordJobDelivery(context.WithoutCancel(ctx), j.ID, s.opts.Owner, d, next); err != nil {
		s.log.Warn("job webhook: record delivery: " + err.Error())
	}
}
