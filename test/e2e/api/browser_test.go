package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestBrowserFetch drives a real headless Chromium (Debian's chromium,
// which `make test` installs) from Go: a page served from an allowed
// origin calls the gateway with fetch and gets a clip and an error it
// can read; the same page served from another origin is refused by the
// browser itself, because the gateway's preflight answer does not allow
// it.
func TestBrowserFetch(t *testing.T) {
	t.Parallel()
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is missing (make test installs it)")
		}
		t.Skip("chromium is missing: run `make test`")
	}
	page := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>voxgate</title><p>caller</p>")
	}
	allowed := httptest.NewServer(http.HandlerFunc(page))
	defer allowed.Close()
	other := httptest.NewServer(http.HandlerFunc(page))
	defer other.Close()

	tg := harness.Start(t, harness.SpeechConfig+"\ncors:\n  allowed_origins: [\""+allowed.URL+"\"]\n")
	key := tg.Keys["acme"]

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The script the page runs: a clip, then an error whose body and
	// request id the page reads. Any failure of fetch itself (the
	// browser refusing the origin) comes back as "refused: ...".
	script := fmt.Sprintf(`(async () => {
		const h = {"Authorization": "Bearer %s", "Content-Type": "application/json"};
		try {
			const r = await fetch(%q, {method: "POST", headers: h,
				body: JSON.stringify({model: "espeak/espeak-ng", voice: "en", text: "Hello browser.", output: {format: "wav"}})});
			const clip = await r.arrayBuffer();
			const e = await fetch(%q, {method: "POST", headers: h, body: JSON.stringify({model: "espeak/nope", voice: "en", text: "x"})});
			const problem = await e.json();
			return r.status + " " + r.headers.get("content-type") + " " + clip.byteLength + " | " +
				e.status + " " + problem.code + " " + (e.headers.get("x-request-id") || "no-request-id");
		} catch (err) {
			return "refused: " + err;
		}
	})()`, key, tg.Base+"/v1/audio/speech", tg.Base+"/v1/audio/speech")

	run := func(url string) string {
		t.Helper()
		// The browser starts with the first action, on bctx itself (a
		// deadline there would bound the browser's life); each action
		// after that has its own generous deadline.
		if _, err := chromedp.Run(bctx, chromedp.Navigate(url)); err != nil {
			t.Fatalf("chromium: navigate: %v", err)
		}
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("chromium: evaluate: %v", err)
		}
		return out
	}
	got := run(allowed.URL)
	parts := strings.Fields(got)
	if n, _ := strconv.Atoi(parts[min(2, len(parts)-1)]); len(parts) < 7 || parts[0] != "200" || parts[1] != "audio/wav" || n < 10000 || parts[4] != "422" || parts[5] != "unknown_model" || parts[6] == "no-request-id" {
		t.Errorf("allowed origin: %q", got)
	}
	if got := run(other.URL); !strings.HasPrefix(got, "refused: TypeError") {
		t.Errorf("other origin: %q, want the browser to refuse it", got)
	}
}
