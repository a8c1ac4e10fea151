package dashboard

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDashboardLexicon: the Pronunciations view lists the default
// dictionary's rules with their kind and plays a rule's word with its
// rule and without it.
func TestDashboardLexicon(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := harness.Start(t, harness.ESpeakConfig)
	for _, rule := range []map[string]any{
		{"word": "Nguyen", "kind": "phoneme", "alphabet": "ipa", "phoneme": "ŋwˈɪn"},
		{"word": "AWS", "replacement": "A W S"},
	} {
		if r := tg.Do("POST", "/v1/pronunciation-dictionaries/default/rules", "acme", rule); r.Status != 201 {
			t.Fatalf("rule: %d %s", r.Status, r.Body)
		}
	}
	br := newBrowser(t)
	br.expectFailure("/ui/api/session", 401, 1)
	br.do("open", chromedp.Navigate(tg.Base+"/ui/"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.setInput("#key", tg.Keys["acme"])
	br.click(`form button[type=submit]`)
	br.wait("signed in", `document.body.innerText.includes("Pronunciations")`)
	br.do("lexicon view", chromedp.Navigate(tg.Base+"/ui/#/lexicon"))
	br.wait("both rules listed with their kinds", `(() => {
		const rows = [...document.querySelectorAll(".lexicon tbody tr")].map((tr) => tr.innerText);
		return rows.some((t) => t.includes("Nguyen") && t.includes("phoneme") && t.includes("IPA: ŋwˈɪn")) &&
			rows.some((t) => t.includes("AWS") && t.includes("alias") && t.includes("A W S"));
	})()`)
	br.axeCheck("lexicon")
	br.click(`button[aria-label="With rule: Nguyen"]`)
	br.wait("the word played with its rule", `(() => {
		const a = document.querySelector(".lexicon audio");
		return a && a.src.startsWith("blob:") && a.getAttribute("aria-label") === "Nguyen, with its rule";
	})()`)
	br.click(`button[aria-label="Without rule: Nguyen"]`)
	br.wait("the word played without its rule", `(() => {
		const a = document.querySelector(".lexicon audio");
		return a && a.src.startsWith("blob:") && a.getAttribute("aria-label") === "Nguyen, without its rule";
	})()`)
}
