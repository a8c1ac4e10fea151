package harness

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// UIClient is a browser-like client of the dashboard: a cookie jar, and
// the CSRF token the page would hold in memory.
type UIClient struct {
	tg     *Gateway
	Client *http.Client
	CSRF   string
}

// NewUIClient is a dashboard client of tg with a cookie jar of its own,
// its answers checked against the OpenAPI document.
func NewUIClient(tg *Gateway) *UIClient {
	jar, _ := cookiejar.New(nil)
	return &UIClient{tg: tg, Client: &http.Client{Jar: jar, Transport: validating(tg.t, nil)}}
}

// Do sends a request with the session's cookie; hdr holds further
// headers as name, value pairs (X-CSRF-Token with u.CSRF where the route
// needs it).
func (u *UIClient) Do(method, path, body string, hdr ...string) *Response {
	u.tg.t.Helper()
	req, err := http.NewRequest(method, u.tg.Base+path, strings.NewReader(body))
	if err != nil {
		u.tg.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := u.Client.Do(req)
	if err != nil {
		u.tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// SignIn opens a dashboard session with the API key and keeps its CSRF
// token.
func (u *UIClient) SignIn(t *testing.T, key string) {
	t.Helper()
	r := u.Do("POST", "/ui/api/session", `{"key":"`+key+`"}`)
	if r.Status != 200 {
		t.Fatalf("sign in: %d %s", r.Status, r.Body)
	}
	var s struct {
		CSRFToken string `json:"csrf_token"`
	}
	r.JSON(t, &s)
	u.CSRF = s.CSRFToken
}
