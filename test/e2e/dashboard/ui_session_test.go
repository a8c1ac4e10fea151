package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// uiClient is a browser-like client of the dashboard: a cookie jar, and
// the CSRF token the page would hold in memory.
type uiClient struct {
	tg   *testGateway
	hc   *http.Client
	csrf string
}

func newUIClient(tg *testGateway) *uiClient {
	jar, _ := cookiejar.New(nil)
	return &uiClient{tg: tg, hc: &http.Client{Jar: jar, Transport: validating(tg.t, nil)}}
}

func (u *uiClient) do(method, path, body string, hdr ...string) *response {
	u.tg.t.Helper()
	req, err := http.NewRequest(method, u.tg.base+path, strings.NewReader(body))
	if err != nil {
		u.tg.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := u.hc.Do(req)
	if err != nil {
		u.tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (u *uiClient) signIn(t *testing.T, key string) {
	t.Helper()
	r := u.do("POST", "/ui/api/session", `{"key":"`+key+`"}`)
	if r.status != 200 {
		t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	var s struct {
		CSRFToken string `json:"csrf_token"`
	}
	r.json(t, &s)
	u.csrf = s.CSRFToken
}

// TestDashboardSessions covers the dashboard's sign-in: a wrong key is
// told apart, the cookie is HttpOnly, SameSite=Strict and for /ui/ only,
// the session reaches the API scoped to its organization, changes need
// the CSRF token, and revoking the key ends the session.
func TestDashboardSessions(t *testing.T) {
	tg := startGateway(t, withEspeakConfig)
	u := newUIClient(tg)

	// Not signed in; a wrong key; a body that is not JSON.
	u.do("GET", "/ui/api/v1/voices", "").problem(t, 401, "unauthorized")
	u.do("GET", "/ui/api/session", "").problem(t, 401, "unauthorized")
	p := u.do("POST", "/ui/api/session", `{"key":"vxk_wrongwrongwrongwrongwrongwrongwrongwrongwro"}`).problem(t, 401, "unauthorized")
	if !strings.Contains(p.Detail, "not valid") {
		t.Errorf("wrong key: %q", p.Detail)
	}
	req, _ := http.NewRequest("POST", tg.base+"/ui/api/session", strings.NewReader("key="+tg.keys["acme"]))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Fatalf("form sign-in (what a cross-site form sends): %v %v", resp.StatusCode, err)
	}

	r := u.do("POST", "/ui/api/session", `{"key":"`+tg.keys["acme"]+`"}`)
	if r.status != 200 {
		t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	sc := r.header.Get("Set-Cookie")
	for _, want := range []string{"voxgate_session=v1.", "HttpOnly", "SameSite=Strict", "path=/ui/", "max-age="} {
		if !strings.Contains(strings.ToLower(sc), strings.ToLower(want)) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
	if strings.Contains(sc, tg.keys["acme"]) || strings.Contains(string(r.body), tg.keys["acme"]) {
		t.Error("the key itself is sent back")
	}
	var sess struct {
		Org       string `json:"org"`
		CSRFToken string `json:"csrf_token"`
		ExpiresAt string `json:"expires_at"`
	}
	r.json(t, &sess)
	if sess.Org != "acme" || sess.CSRFToken == "" || sess.ExpiresAt == "" {
		t.Fatalf("session = %s", r.body)
	}
	u.csrf = sess.CSRFToken
	if r := u.do("GET", "/ui/api/session", ""); r.status != 200 || r.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("session: %d %v", r.status, r.header)
	}

	// The API through the session, as the organization of the key.
	if r := u.do("GET", "/ui/api/v1/voices", ""); r.status != 200 {
		t.Fatalf("voices: %d %s", r.status, r.body)
	}
	voice := `{"title":"N","provider":"espeak","model":"espeak-ng","voice_id":"en"}`
	u.do("POST", "/ui/api/v1/voices", voice).problem(t, 403, "csrf_failed")
	u.do("POST", "/ui/api/v1/voices", voice, "X-CSRF-Token", "forged").problem(t, 403, "csrf_failed")
	// globex's voice is invisible to acme's session.
	gvoice := tg.do("POST", "/v1/voices", "globex", voice).voice(t)
	u.do("GET", "/ui/api/v1/voices/"+gvoice.ID, "").problem(t, 404, "voice_not_found")
	u.do("DELETE", "/ui/api/v1/voices/"+gvoice.ID, "", "X-CSRF-Token", u.csrf).problem(t, 404, "voice_not_found")

	// Bearer keys do not work on the dashboard's API, nor cookies on /v1.
	tg.do("GET", "/ui/api/v1/voices", "acme", nil).problem(t, 401, "unauthorized")
	base, _ := url.Parse(tg.base + "/v1/voices")
	if len(u.hc.Jar.Cookies(base)) != 0 {
		t.Error("the session cookie would be sent to /v1")
	}

	// A second browser signed in as globex sees only globex.
	g := newUIClient(tg)
	g.signIn(t, tg.keys["globex"])
	var page struct {
		Data []struct{ ID string } `json:"data"`
	}
	g.do("GET", "/ui/api/v1/voices", "").json(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != gvoice.ID {
		t.Errorf("globex voices = %+v", page.Data)
	}

	// Signing out needs the token too; then the cookie is gone.
	u.do("DELETE", "/ui/api/session", "").problem(t, 403, "csrf_failed")
	if r := u.do("DELETE", "/ui/api/session", "", "X-CSRF-Token", u.csrf); r.status != 204 {
		t.Fatalf("sign out: %d", r.status)
	}
	u.do("GET", "/ui/api/v1/voices", "").problem(t, 401, "unauthorized")

	// Revoking the key ends the sessions it opened.
	ctx := context.Background()
	key, k, err := tg.g.CreateKey(ctx, "acme", "dashboard", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	u.signIn(t, key)
	if r := u.do("GET", "/ui/api/v1/voices", ""); r.status != 200 {
		t.Fatalf("voices: %d", r.status)
	}
	if _, err := tg.g.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	p = u.do("GET", "/ui/api/v1/voices", "").problem(t, 401, "unauthorized")
	if !strings.Contains(p.Detail, "revoked") {
		t.Errorf("revoked: %q", p.Detail)
	}
	u.do("POST", "/ui/api/session", `{"key":"`+key+`"}`).problem(t, 401, "unauthorized")
}

// TestDashboardSessionAcrossInstances signs in on one gateway and uses
// the session on another that shares its PostgreSQL, as behind a load
// balancer; a key revoked on the first ends the session on the second.
func TestDashboardSessionAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	dsn := pgtest.StartT(t).NewDatabaseT(t)
	cfg := strings.Replace(withEspeakConfig, "  path: %DIR%/voxgate.db\n", "  driver: postgres\n  dsn: "+dsn+"\n  path: %DIR%/voxgate.db\n", 1)
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	ctx := context.Background()
	key, k, err := a.g.CreateKey(ctx, "acme", "dashboard", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	u := newUIClient(a)
	u.signIn(t, key)
	onB := func() *response {
		req, _ := http.NewRequest("GET", b.base+"/ui/api/v1/voices", nil)
		resp, err := u.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return &response{status: resp.StatusCode, header: resp.Header, body: body}
	}
	// A new key reaches the other instance's key table within a second.
	deadline := time.Now().Add(10 * time.Second)
	for r := onB(); r.status != 200; r = onB() {
		if time.Now().After(deadline) {
			t.Fatalf("the session on the other instance: %d %s", r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := a.g.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for onB().status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the other instance still accepts the session of a revoked key")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
