package dashboard

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDashboardAdminView: an admin key signs in to the admin view
// (organizations, keys with their limits and spend), makes an
// organization and a key, sees the key once, and revokes it; an
// organization's key still gets the organization's view. axe-core checks
// both admin views.
func TestDashboardAdminView(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := harness.Start(t, harness.ESpeakConfig)
	adm, _, err := tg.Core.CreateAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = adm
	// Spend to show: one synthesis by acme's key.
	if r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Spend a little.")); r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	tg.FlushLogs()

	br := newBrowser(t)
	br.expectFailure("/ui/api/session", 401, 1)
	br.do("open", chromedp.Navigate(tg.Base+"/ui/"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.setInput("#key", adm)
	br.click(`form button[type=submit]`)
	br.wait("organizations listed", `document.querySelector("tr[data-org-id=acme]") !== null && document.querySelector("tr[data-org-id=globex]") !== null`)
	if text := br.text(); !strings.Contains(text, "Organizations") || !strings.Contains(text, "gateway.yaml") || strings.Contains(text, "Playground") {
		t.Errorf("the admin view shows %.600s", text)
	}
	br.axeCheck("admin organizations")

	// A new organization, with eSpeak enabled.
	br.setInput("#org-id", "team-x")
	br.setInput("#org-name", "Team X")
	br.setInput("#org-providers", "espeak")
	br.clickText("Create organization")
	br.wait("team-x listed", `(() => { const tr = document.querySelector("tr[data-org-id=team-x]"); return tr && tr.innerText.includes("admin API") && tr.innerText.includes("espeak") })()`)
	var o struct {
		Data struct {
			Name      string `json:"name"`
			ManagedBy string `json:"managedBy"`
		} `json:"data"`
	}
	tg.Do("GET", "/v1/admin/orgs/team-x", "admin", nil).JSON(t, &o)
	if o.Data.Name != "Team X" || o.Data.ManagedBy != "api" {
		t.Errorf("made %+v", o.Data)
	}

	// Keys: acme's, with its spend; then one of team-x with a rate limit.
	br.do("keys view", chromedp.Navigate(tg.Base+"/ui/#/keys"))
	br.wait("acme's key and its spend", `(() => { const rows = document.querySelectorAll("tr[data-key-id]"); return rows.length === 1 && rows[0].innerText.includes("1 requests") })()`)
	br.axeCheck("admin keys")
	br.setInput("#keys-org", "team-x")
	br.wait("team-x has no keys", `document.body.innerText.includes("No keys yet.")`)
	br.setInput("#key-name", "ci")
	br.setInput("#key-rate", "30")
	br.clickText("Create key")
	br.wait("the key shown once", `document.querySelector("#made-key") !== null && document.querySelector("#made-key").textContent.startsWith("vxk_")`)
	var plain string
	br.js(`document.querySelector("#made-key").textContent`, &plain)
	br.wait("the key listed with its limit", `[...document.querySelectorAll("tr[data-key-id]")].some(tr => tr.innerText.includes("ci") && tr.innerText.includes("30 / min"))`)
	tg.Keys["team-x"] = plain
	if r := tg.Do("GET", "/v1/voices", "team-x", nil); r.Status != 200 {
		t.Fatalf("the key made in the dashboard: %d %s", r.Status, r.Body)
	}
	br.clickText("Done")
	br.js(`window.confirm = () => true; true`, nil)
	br.clickText("Revoke")
	br.wait("revoked", `[...document.querySelectorAll("tr[data-key-id]")].some(tr => tr.innerText.includes("revoked"))`)
	tg.Do("GET", "/v1/voices", "team-x", nil).Problem(t, 401, "unauthorized")
	br.noProblems("admin view")

	// An organization's key gets the organization's view, as before.
	org := newBrowser(t)
	org.expectFailure("/ui/api/session", 401, 1)
	org.do("open", chromedp.Navigate(tg.Base+"/ui/#/orgs"))
	org.wait("sign-in form", `document.querySelector("#key") !== null`)
	org.setInput("#key", tg.Keys["acme"])
	org.click(`form button[type=submit]`)
	org.wait("the organization's view", `document.body.innerText.includes("Playground") && document.body.innerText.includes("acme")`)
	if strings.Contains(org.text(), "Organizations") {
		t.Error("an organization's key sees the admin view")
	}
	org.noProblems("org view")
}
