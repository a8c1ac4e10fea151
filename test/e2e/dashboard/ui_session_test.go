package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDashboardSessions covers the dashboard's sign-in: a wrong key is
// told apart, the cookie is HttpOnly, SameSite=Strict and for /ui/ only,
// the session reaches the API scoped to its organization, changes need
// the CSRF token, and revoking the key ends the session.
func TestDashboardSessions(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	u := harness.NewUIClient(tg)

	// Not signed in; a wrong key; a body that is not JSON.
	u.Do("GET", "/ui/api/v1/voices", "").Problem(t, 401, "unauthorized")
	u.Do("GET", "/ui/api/session", "").Problem(t, 401, "unauthorized")
	p := u.Do("POST", "/ui/api/session", `{"key":"vxk_wrongwrongwrongwrongwrongwrongwrongwrongwro"}`).Problem(t, 401, "unauthorized")
	if !strings.Contains(p.Detail, "not valid") {
		t.Errorf("wrong key: %q", p.Detail)
	}
	req, _ := http.NewRequest("POST", tg.Base+"/ui/api/session", strings.NewReader("key="+tg.Keys["acme"]))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Fatalf("form sign-in (what a cross-site form sends): %v %v", resp.StatusCode, err)
	}

	r := u.Do("POST", "/ui/api/session", `{"key":"`+tg.Keys["acme"]+`"}`)
	if r.Status != 200 {
		t.Fatalf("sign in: %d %s", r.Status, r.Body)
	}
	sc := r.Header.Get("Set-Cookie")
	for _, want := range []string{"voxgate_session=v1.", "HttpOnly", "SameSite=Strict", "path=/ui/", "max-age="} {
		if !strings.Contains(strings.ToLower(sc), strings.ToLower(want)) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
	if strings.Contains(sc, tg.Keys["acme"]) || strings.Contains(string(r.Body), tg.Keys["acme"]) {
		t.Error("the key itself is sent back")
	}
	var sess struct {
		Org       string `json:"org"`
		CSRFToken string `json:"csrf_token"`
		ExpiresAt string `json:"expires_at"`
	}
	r.JSON(t, &sess)
	if sess.Org != "acme" || sess.CSRFToken == "" || sess.ExpiresAt == "" {
		t.Fatalf("session = %s", r.Body)
	}
	u.CSRF = sess.CSRFToken
	if r := u.Do("GET", "/ui/api/session", ""); r.Status != 200 || r.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("session: %d %v", r.Status, r.Header)
	}

	// The API through the session, as the organization of the key.
	if r := u.Do("GET", "/ui/api/v1/voices", ""); r.Status != 200 {
		t.Fatalf("voices: %d %s", r.Status, r.Body)
	}
	voice := `{"title":"N","provider":"espeak","model":"espeak-ng","voice_id":"en"}`
	u.Do("POST", "/ui/api/v1/voices", voice).Problem(t, 403, "csrf_failed")
	u.Do("POST", "/ui/api/v1/voices", voice, "X-CSRF-Token", "forged").Problem(t, 403, "csrf_failed")
	// globex's voice is invisible to acme's session.
	gvoice := tg.Do("POST", "/v1/voices", "globex", voice).Voice(t)
	u.Do("GET", "/ui/api/v1/voices/"+gvoice.ID, "").Problem(t, 404, "voice_not_found")
	u.Do("DELETE", "/ui/api/v1/voices/"+gvoice.ID, "", "X-CSRF-Token", u.CSRF).Problem(t, 404, "voice_not_found")

	// Bearer keys do not work on the dashboard's API, nor cookies on /v1.
	tg.Do("GET", "/ui/api/v1/voices", "acme", nil).Problem(t, 401, "unauthorized")
	base, _ := url.Parse(tg.Base + "/v1/voices")
	if len(u.Client.Jar.Cookies(base)) != 0 {
		t.Error("the session cookie would be sent to /v1")
	}

	// A second browser signed in as globex sees only globex.
	g := harness.NewUIClient(tg)
	g.SignIn(t, tg.Keys["globex"])
	var page struct {
		Data []struct{ ID string } `json:"data"`
	}
	g.Do("GET", "/ui/api/v1/voices", "").JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != gvoice.ID {
		t.Errorf("globex voices = %+v", page.Data)
	}

	// Signing out needs the token too; then the cookie is gone.
	u.Do("DELETE", "/ui/api/session", "").Problem(t, 403, "csrf_failed")
	if r := u.Do("DELETE", "/ui/api/session", "", "X-CSRF-Token", u.CSRF); r.Status != 204 {
		t.Fatalf("sign out: %d", r.Status)
	}
	u.Do("GET", "/ui/api/v1/voices", "").Problem(t, 401, "unauthorized")

	// Revoking the key ends the sessions it opened.
	ctx := context.Background()
	key, k, err := tg.Core.CreateKey(ctx, "acme", "dashboard", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	u.SignIn(t, key)
	if r := u.Do("GET", "/ui/api/v1/voices", ""); r.Status != 200 {
		t.Fatalf("voices: %d", r.Status)
	}
	if _, err := tg.Core.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	p = u.Do("GET", "/ui/api/v1/voices", "").Problem(t, 401, "unauthorized")
	if !strings.Contains(p.Detail, "revoked") {
		t.Errorf("revoked: %q", p.Detail)
	}
	u.Do("POST", "/ui/api/session", `{"key":"`+key+`"}`).Problem(t, 401, "unauthorized")
}

// TestDashboardSessionAcrossInstances signs in on one gateway and uses
// the session on another that shares its PostgreSQL, as behind a load
// balancer; a key revoked on the first ends the session on the second.
func TestDashboardSessionAcrossInstances(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	dsn := pgtest.StartT(t).NewDatabaseT(t)
	cfg := strings.Replace(harness.ESpeakConfig, "  path: %DIR%/voxgate.db\n", "  driver: postgres\n  dsn: "+dsn+"\n  path: %DIR%/voxgate.db\n", 1)
	cfg = harness.ShareProvenanceKey(t, cfg)
	a, b := harness.Start(t, cfg), harness.Start(t, cfg)
	ctx := context.Background()
	key, k, err := a.Core.CreateKey(ctx, "acme", "dashboard", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	u := harness.NewUIClient(a)
	u.SignIn(t, key)
	onB := func() *harness.Response {
		req, _ := http.NewRequest("GET", b.Base+"/ui/api/v1/voices", nil)
		resp, err := u.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return &harness.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	}
	// A new key reaches the other instance's key table within a second.
	deadline := time.Now().Add(10 * time.Second)
	for r := onB(); r.Status != 200; r = onB() {
		if time.Now().After(deadline) {
			t.Fatalf("the session on the other instance: %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := a.Core.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for onB().Status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the other instance still accepts the session of a revoked key")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
