package sdk

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Planner is an optional extension of Provider for providers whose speech
// call is one plain HTTP request whose response body is the audio (OpenAI's
// and ElevenLabs' speech endpoints, for example).
//
// Such a provider builds the request and the gateway sends it: the audio
// then goes from the provider to the listener without crossing the plugin
// process, which takes a gRPC hop and the plugin's HTTP client off every
// request. The plugin still owns everything provider-specific: the URL,
// the headers and credentials, the body, and what an error response means
// (Explain). The gateway keeps a plan for ReuseFor and fills in only the
// text for later requests that ask for the same thing.
//
// The gateway uses the Synthesize and Stream methods as before for what a
// plan cannot express (word timestamps), and whenever Plan returns an
// *Error of kind KindUnsupported.
//
// Serve detects a Provider that implements Planner and reports it to the
// gateway; plugin authors only implement the two methods.
type Planner interface {
	// Plan builds the upstream request that renders req. req.Request.Text
	// is PlanText: the body must carry it exactly once, as (part of) a
	// JSON string, and the gateway puts the JSON-escaped text there.
	// Validation failures are the caller's, as in Synthesize.
	Plan(ctx context.Context, req *PlanRequest) (*Plan, error)

	// Explain turns an upstream error response (status >= 300) of a
	// planned request into the *Error the caller sees, as Synthesize
	// would have returned it: the provider's error code and message,
	// UpstreamStatus, kind and retry advice. It must never put the
	// credentials in the message.
	Explain(ctx context.Context, f *Failure) error
}

// PlanText stands for the text to speak in a PlanRequest. It is plain
// ASCII that encoding/json leaves as it is, so a plugin can marshal its
// usual body and the placeholder survives intact.
const PlanText = "{{voxgate:text}}"

// PlanRequest asks a Planner for the request of one synthesis.
type PlanRequest struct {
	// Request is what to render; its Text is PlanText and Timestamps is
	// false.
	Request *SynthesizeRequest
	// Stream asks for a request whose answer arrives as the provider
	// produces it (the Stream method's equivalent).
	Stream bool
}

// Plan is an upstream HTTP request built by a Planner and sent by the
// gateway.
type Plan struct {
	// Method and URL of the request; URL is absolute http or https.
	Method string
	URL    string
	// Header holds the request headers, credentials included.
	Header map[string]string
	// Body is the request body, with PlanText exactly once inside a JSON
	// string.
	Body []byte
	// MediaType is the media type of a successful answer's body, as in
	// SynthesizeResponse.MediaType ("audio/pcm;rate=24000", "audio/mpeg").
	MediaType string
	// FrameSize is the byte size of one sample frame of a PCM answer (2
	// for 16-bit mono); a body that is not a whole number of frames is a
	// provider failure. 0 or 1: no framing.
	FrameSize int
	// MaxAttempts bounds the tries, the first included, after a network
	// failure or a 408, 429, 500, 502, 503 or 504 answer (waiting with
	// backoff and honouring Retry-After); 0 means 1.
	MaxAttempts int
	// Timeout bounds a whole-clip call; 0 leaves only the gateway's own
	// provider timeout, which also bounds a planned stream as a whole.
	Timeout time.Duration
	// ReuseFor is how long the gateway may reuse the plan for requests
	// that differ from this one only in text; 0 means not at all.
	ReuseFor time.Duration
	// BilledHeaders names the answer's headers that say what the call
	// was billed, each mapped to its unit (ElevenLabs:
	// "character-cost": UnitCharacters): the gateway reads them as
	// SynthesizeResponse.Billed when it sends the request itself.
	BilledHeaders map[string]string
}

// TextSlot validates p and returns the offset of PlanText in Body; the
// body around it is p.Body[:at] and p.Body[at+len(PlanText):].
func (p *Plan) TextSlot() (at int, err error) {
	switch p.Method {
	case "GET", "POST", "PUT":
	default:
		return 0, fmt.Errorf("plan: method %q: want GET, POST or PUT", p.Method)
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0, fmt.Errorf("plan: URL %q is not an absolute http(s) URL", p.URL)
	}
	if p.MediaType == "" {
		return 0, fmt.Errorf("plan: no media type for the answer")
	}
	for k, v := range p.Header {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			return 0, fmt.Errorf("plan: malformed header %q", k)
		}
	}
	at = bytes.Index(p.Body, []byte(PlanText))
	if at < 0 {
		return 0, fmt.Errorf("plan: the body does not carry the text placeholder")
	}
	if bytes.Contains(p.Body[at+len(PlanText):], []byte(PlanText)) {
		return 0, fmt.Errorf("plan: the body carries the text placeholder more than once")
	}
	return at, nil
}

// Failure is an upstream error response to a planned request, for
// Planner.Explain.
type Failure struct {
	// Status is the HTTP status (>= 300).
	Status int
	// Header holds the response headers (the first value of each, names
	// in canonical form, e.g. "Retry-After").
	Header map[string]string
	// Body is the start of the response body (at most 64 KiB).
	Body []byte
	// Credentials are the call's, so that Explain can redact them.
	Credentials Credentials
}
