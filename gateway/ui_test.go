package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/voxgate/voxgate/gateway/auth"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/ui"
)

// The dashboard, driven in Debian's headless chromium as a person would
// use it: sign in (a wrong key first), find the rows of requests made
// before, filter them, open a conversation's turns, play a clip in the
// playground and watch the highlighted word advance, create and delete a
// voice, look at usage and providers; axe-core in the page after each
// view; no console errors; screenshots at 1280 and 390 pixels wide. Then
// an expired session and a revoked key return to sign-in.
//
// Screenshots go to testdata/ui-artifacts (gitignored), or with
// VOXGATE_UI_DOCS=1 also to ../docs for the README.

const uiConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, credits_per_1k_chars: 1}
orgs:
  acme:
    providers: {espeak: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}}
`

// browser is a chromium tab and what it reported.
type browser struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	// problems are console errors and uncaught exceptions.
	problems []string
	dir      string
	docs     string
	axe      string
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath()
	axe, err := os.ReadFile(filepath.Join("ui", "web", "node_modules", "axe-core", "axe.min.js"))
	if exe == "" || err != nil {
		msg := fmt.Sprintf("needs chromium (found %q) and axe-core (%v): run `make build`", exe, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b := &browser{t: t, dir: filepath.Join("testdata", "ui-artifacts"), axe: string(axe)}
	if os.Getenv("VOXGATE_UI_DOCS") != "" {
		b.docs = filepath.Join("..", "docs")
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root in CI containers
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Flag("mute-audio", true),
		// A microphone that plays a tone, granted without a prompt, for
		// recording a sample to clone.
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.Env("TZ=UTC"),
	}
	ctx, cancel := chromedp.NewContext(context.Background(),
		chromedp.WithAllocatorOptions(opts...),
		chromedp.WithListener(b.listen))
	t.Cleanup(cancel)
	b.ctx = ctx
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// listen collects console errors and exceptions. Failed requests the
// browser logs (source "network") are left out: the test provokes 401s
// on purpose; the page's handling of them is what it checks.
func (b *browser) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range e.Args {
			parts = append(parts, string(a.Value)+a.Description)
		}
		msg = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
	case *log.EventEntryAdded:
		if e.Entry.Level != log.EntryLevelError || e.Entry.Source == log.EntrySourceNetwork {
			return
		}
		msg = "log (" + string(e.Entry.Source) + "): " + e.Entry.Text + " " + e.Entry.URL
	default:
		return
	}
	b.mu.Lock()
	b.problems = append(b.problems, msg)
	b.mu.Unlock()
}

// do runs actions with a bound that only a hang would reach.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v\npage text: %.2000s", what, err, b.text())
	}
}

// js evaluates an expression and decodes its value into out (nil: none).
func (b *browser) js(expr string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %.200s: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("evaluate %.200s: decode %s: %v", expr, raw, err)
		}
	}
}

// wait polls a JavaScript predicate.
func (b *browser) wait(what, predicate string) {
	b.t.Helper()
	b.do(what, chromedp.Steps(func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
		return chromedp.Void{}, err
	}))
}

func (b *browser) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// html is the whole document, for checks that nothing of another
// organization is anywhere in it.
func (b *browser) html() string {
	var s string
	b.js(`document.documentElement.outerHTML`, &s)
	return s
}

// setInput types into an input the way a user would, for Preact's
// handlers: the value, then an input event.
func (b *browser) setInput(sel, value string) {
	b.t.Helper()
	b.js(fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) throw new Error("no " + %q);
		const proto = el.tagName === "SELECT" ? HTMLSelectElement.prototype : el.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(el, %q);
		el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, sel, sel, value), nil)
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// clickText clicks the button or link whose text is text.
func (b *browser) clickText(text string) {
	b.t.Helper()
	b.js(fmt.Sprintf(`(() => { const el = [...document.querySelectorAll("button, a")].find(e => e.textContent.trim() === %q);
		if (!el) throw new Error("nothing to click named " + %q); el.click(); return true })()`, text, text), nil)
}

func (b *browser) goTo(view string) {
	b.t.Helper()
	b.js(fmt.Sprintf(`location.hash = "#/%s"; true`, view), nil)
	b.wait("open "+view, fmt.Sprintf(`document.querySelector("nav a[aria-current=page]") && document.querySelector("nav a[aria-current=page]").getAttribute("href") === "#/%s"`, view))
}

// screenshots takes the page at 1280 and 390 pixels wide.
func (b *browser) screenshots(name string) {
	b.t.Helper()
	for _, w := range []int64{1280, 390} {
		var png []byte
		b.do("screenshot "+name, chromedp.EmulateViewport(w, 900), chromedp.Sleep(300*time.Millisecond),
			chromedp.Steps(func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
				var err error
				png, err = chromedp.FullScreenshot(100)(ctx, t)
				return chromedp.Void{}, err
			}))
		file := fmt.Sprintf("%s-%d.png", name, w)
		if err := os.WriteFile(filepath.Join(b.dir, file), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		if b.docs != "" && w == 1280 && (name == "logs" || name == "playground") {
			// The README's pictures: what the first screen shows.
			var view []byte
			b.do("screenshot for docs", chromedp.Steps(func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
				var err error
				view, err = chromedp.CaptureScreenshot()(ctx, t)
				return chromedp.Void{}, err
			}))
			if err := os.WriteFile(filepath.Join(b.docs, "dashboard-"+name+".png"), view, 0o644); err != nil {
				b.t.Fatal(err)
			}
		}
		// The page must not scroll sideways at phone width: wide tables
		// scroll inside their own region instead.
		if w == 390 {
			var overflow bool
			b.js(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow)
			if overflow {
				b.t.Errorf("%s: the page is wider than a 390-pixel screen", name)
			}
		}
	}
	b.do("viewport", chromedp.EmulateViewport(1280, 900))
}

// axe runs axe-core in the page and fails on serious or critical
// violations.
func (b *browser) axeCheck(view string) {
	b.t.Helper()
	var injected bool
	b.js(`typeof window.axe !== "undefined"`, &injected)
	if !injected {
		b.js(b.axe+";true", nil)
	}
	var violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []string `json:"target"`
		} `json:"nodes"`
	}
	b.js(`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => ({target: n.target.map(String)}))})))`, &violations)
	for _, v := range violations {
		if v.Impact == "serious" || v.Impact == "critical" {
			var where []string
			for _, n := range v.Nodes {
				where = append(where, strings.Join(n.Target, " "))
			}
			b.t.Errorf("%s: axe %s (%s): %s at %v", view, v.ID, v.Impact, v.Help, where)
		}
	}
}

func (b *browser) noProblems(when string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("%s: %s", when, p)
	}
	b.problems = nil
}

func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := startGateway(t, uiConfig)
	br := newBrowser(t)

	// Requests made before the browser: a clip, a failure, a conversation
	// (two turns), each with a request id the test knows; and globex's
	// request, which must never show.
	ids := map[string]string{"clip": "ui-clip-0001", "bad": "ui-bad-0002", "conv": "ui-conv-0003", "globex": "ui-globex-0004"}
	speech := `{"model":"espeak/espeak-ng","voice":"en","text":"Logged before the browser came."}`
	if r := tg.do("POST", "/v1/audio/speech", "acme", speech, "X-Request-Id", ids["clip"]); r.status != 200 {
		t.Fatalf("clip: %d %s", r.status, r.body)
	}
	if r := tg.do("POST", "/v1/audio/speech", "acme", `{"model":"espeak/espeak-ng","voice":"no-such-voice","text":"x"}`, "X-Request-Id", ids["bad"]); r.status < 400 {
		t.Fatalf("bad: %d", r.status)
	}
	if r := tg.do("POST", "/v1/audio/conversation", "acme", `{"model":"espeak/espeak-ng","turns":[{"voice":"en","text":"First turn."},{"voice":"de","text":"Zweiter Zug."}]}`, "X-Request-Id", ids["conv"]); r.status != 200 {
		t.Fatalf("conversation: %d %s", r.status, r.body)
	}
	if r := tg.do("POST", "/v1/audio/speech", "globex", speech, "X-Request-Id", ids["globex"]); r.status != 200 {
		t.Fatalf("globex: %d", r.status)
	}
	globexVoice := tg.do("POST", "/v1/voices", "globex", `{"title":"Globex Secret Voice","provider":"espeak","model":"espeak-ng","voice_id":"en"}`)
	if globexVoice.status != 201 {
		t.Fatalf("globex voice: %d %s", globexVoice.status, globexVoice.body)
	}
	// Older rows, enough for a second page.
	for i := range 60 {
		tg.g.Logs().Record(store.LogRow{RequestID: fmt.Sprintf("ui-old-%04d", i), OrgID: "acme", TS: time.Now().Add(-time.Hour - time.Duration(i)*time.Second),
			Path: "/v1/audio/speech", Status: 200, Provider: "espeak", Model: "espeak-ng", VoiceID: "en", CharCount: 10, CreditsUsed: 1, LatencyMS: 5})
	}
	tg.flushLogs()
	foreign := func(when string) {
		t.Helper()
		h := br.html()
		for _, s := range []string{ids["globex"], "Globex Secret Voice", "globex"} {
			if strings.Contains(h, s) {
				t.Errorf("%s: the page shows %q of another organization", when, s)
			}
		}
	}

	// Sign in: a wrong key first.
	br.do("open", chromedp.Navigate(tg.base+"/ui/"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.axeCheck("sign-in")
	br.setInput("#key", "vxk_"+strings.Repeat("x", 43))
	br.click(`form button[type=submit]`)
	br.wait("wrong key message", `document.querySelector("[role=alert]") && document.querySelector("[role=alert]").textContent.includes("not valid")`)
	br.setInput("#key", tg.keys["acme"])
	br.click(`form button[type=submit]`)

	// Logs: the rows of the requests made before.
	br.wait("log rows", fmt.Sprintf(`document.querySelector('tr[data-request-id=%q]') && document.querySelector('tr[data-request-id=%q]') && document.querySelector('tr[data-request-id=%q]')`, ids["clip"], ids["bad"], ids["conv"]))
	var stored []string
	br.js(`Object.keys(localStorage).concat(Object.keys(sessionStorage))`, &stored)
	var cookieVisible bool
	br.js(`document.cookie.includes("voxgate_session")`, &cookieVisible)
	if len(stored) > 0 || cookieVisible {
		t.Errorf("the session is reachable from the page: storage %v, document.cookie %v", stored, cookieVisible)
	}
	if strings.Contains(br.html(), tg.keys["acme"]) {
		t.Error("the key is still in the page after sign-in")
	}
	foreign("logs")

	// Paging: 50 rows, then the next page through the cursor.
	var shown int
	br.js(`document.querySelectorAll("tbody tr").length`, &shown)
	if shown != 50 {
		t.Errorf("first page: %d rows, want 50", shown)
	}
	br.clickText("Load more")
	br.wait("second page", `document.querySelectorAll("tbody tr").length === 65 && document.querySelector('tr[data-request-id="ui-old-0059"]') !== null`)

	// Filter: the failure by its status, then back.
	var badStatus int
	br.js(fmt.Sprintf(`Number(document.querySelector('tr[data-request-id=%q] .status').textContent)`, ids["bad"]), &badStatus)
	br.setInput("#f-status", fmt.Sprint(badStatus))
	br.clickText("Apply filters")
	br.wait("filtered", fmt.Sprintf(`document.querySelectorAll("tbody tr").length === 1 && document.querySelector('tr[data-request-id=%q]') !== null`, ids["bad"]))
	br.clickText("Reset")
	br.wait("unfiltered", fmt.Sprintf(`document.querySelector('tr[data-request-id=%q]') !== null`, ids["conv"]))

	// The conversation's turns.
	br.click(fmt.Sprintf(`tr[data-request-id=%q] button`, ids["conv"]))
	br.wait("conversation turns", `document.querySelectorAll(".turns li").length === 2`)
	var detail string
	br.js(`document.querySelector(".detail").innerText`, &detail)
	for _, want := range []string{ids["conv"], "Moderation", "Conversation turns", "Decision"} {
		if !strings.Contains(detail, want) {
			t.Errorf("conversation detail lacks %q:\n%s", want, detail)
		}
	}
	br.axeCheck("logs")
	br.screenshots("logs")

	// Live tail: a request made now appears without a reload.
	br.click(`.actions input[type=checkbox]`)
	if r := tg.do("POST", "/v1/audio/speech", "acme", speech, "X-Request-Id", "ui-live-0005"); r.status != 200 {
		t.Fatalf("live: %d", r.status)
	}
	tg.flushLogs()
	br.wait("live row", `document.querySelector('tr[data-request-id="ui-live-0005"]') !== null`)
	br.click(`.actions input[type=checkbox]`)
	br.noProblems("logs")

	// Playground: speak, hear, see the words light up in turn.
	br.goTo("playground")
	br.wait("voices loaded", `document.querySelector("#pg-voice") && document.querySelector("#pg-voice").value !== ""`)
	br.setInput("#pg-text", "One two three four five six seven eight nine ten eleven twelve.")
	br.clickText("Speak")
	br.wait("audio ready", `(() => { const a = document.querySelector("audio"); return a && isFinite(a.duration) && a.duration > 0 })()`)
	var duration float64
	br.js(`document.querySelector("audio").duration`, &duration)
	if duration < 1 {
		t.Errorf("the clip plays %v s", duration)
	}
	br.js(`(() => { const a = document.querySelector("audio"); a.currentTime = 0; return a.play().then(() => true) })()`, nil)
	br.wait("a word lit", `document.querySelector(".word.current") !== null`)
	var first int
	br.js(`Number(document.querySelector(".word.current").dataset.index)`, &first)
	br.wait("the next word lit", fmt.Sprintf(`document.querySelector(".word.current") && Number(document.querySelector(".word.current").dataset.index) > %d`, first))
	br.js(`document.querySelector("audio").pause(); true`, nil)
	var download, curl string
	br.js(`document.querySelector("a[download]").getAttribute("href")`, &download)
	br.js(`document.querySelector(".curl").textContent`, &curl)
	if !strings.HasPrefix(download, "blob:") || !strings.Contains(curl, "/v1/audio/speech/with-timestamps") || !strings.Contains(curl, "$VOXGATE_KEY") || strings.Contains(curl, tg.keys["acme"]) {
		t.Errorf("download %q, curl %q", download, curl)
	}
	br.axeCheck("playground")
	br.screenshots("playground")
	br.noProblems("playground")

	// Voices: create one, then delete it.
	br.goTo("voices")
	br.wait("voice form", `document.querySelector("#v-voice") && document.querySelector("#v-voice").value !== ""`)
	br.setInput("#v-title", "Browser Narrator")
	br.setInput("#v-tags", "ui, test")
	br.clickText("Create voice")
	br.wait("voice created", `[...document.querySelectorAll("tbody th")].some(th => th.textContent === "Browser Narrator")`)
	foreign("voices")
	br.axeCheck("voices")
	br.screenshots("voices")
	br.js(`window.confirm = () => true; true`, nil)
	br.js(`[...document.querySelectorAll("tbody tr")].find(tr => tr.querySelector("th").textContent === "Browser Narrator").querySelector("button.danger").click(); true`, nil)
	br.wait("voice deleted", `![...document.querySelectorAll("tbody th")].some(th => th.textContent === "Browser Narrator") && document.body.innerText.includes("Deleted")`)
	var left struct {
		Data []struct{ Title string } `json:"data"`
	}
	tg.do("GET", "/v1/voices", "acme", nil).json(t, &left)
	if len(left.Data) != 0 {
		t.Errorf("voices left after the delete: %+v", left.Data)
	}
	br.noProblems("voices")

	// Usage and providers.
	br.goTo("usage")
	br.wait("usage charts", `document.querySelectorAll("figure.chart svg").length === 5 && document.querySelector(".kpi") !== null`)
	foreign("usage")
	br.axeCheck("usage")
	br.screenshots("usage")
	br.goTo("providers")
	br.wait("catalog", `document.body.innerText.includes("espeak")`)
	br.axeCheck("providers")
	br.screenshots("providers")
	br.noProblems("usage and providers")

	// An expired session returns to sign-in and says why.
	expired, _ := ui.NewSessions(nil, tg.g.Store().Secret(), time.Minute, func() time.Time { return time.Now().Add(-time.Hour) }).
		Issue(auth.Principal{OrgID: "acme", KeyID: "whatever"})
	br.do("expire the session", chromedp.Steps(func(ctx context.Context, tt *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tt, network.SetCookie, network.SetCookieParams{Name: ui.CookieName, Value: expired, URL: tg.base + "/ui/", Path: "/ui/"})
		return chromedp.Void{}, err
	}))
	br.js(`location.hash = "#/voices"; true`, nil) // its requests meet the expired session
	br.wait("back to sign-in", `document.querySelector("#key") !== null && document.body.innerText.includes("session expired")`)

	// A revoked key does too.
	key, k, err := tg.g.CreateKey(context.Background(), "acme", "to revoke", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	br.setInput("#key", key)
	br.click(`form button[type=submit]`)
	br.wait("signed in again", `document.querySelector("nav") !== null`)
	if _, err := tg.g.RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	br.js(`location.hash = "#/logs"; true`, nil)
	br.wait("back to sign-in after revocation", `document.querySelector("#key") !== null && document.body.innerText.includes("revoked")`)
	br.noProblems("sign-in")
	t.Logf("screenshots in %s", br.dir)
}

// TestDashboardClonesAVoice clones a voice in the browser from an
// uploaded WAV file, on a provider that can clone (the ElevenLabs plugin
// against its fake).
func TestDashboardClonesAVoice(t *testing.T) {
	if testing.Short() {
		t.Skip("drives chromium")
	}
	c := startCloud(t)
	sample := c.do("POST", "/v1/audio/speech", "acme", speechBody("A few seconds of my voice for cloning purposes.", "output", map[string]any{"format": "wav"}))
	if sample.status != 200 {
		t.Fatalf("sample: %d", sample.status)
	}
	file := filepath.Join(t.TempDir(), "me.wav")
	if err := os.WriteFile(file, sample.body, 0o600); err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t)
	br.do("open", chromedp.Navigate(c.base+"/ui/#/voices"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.setInput("#key", c.keys["acme"])
	br.click(`form button[type=submit]`)
	br.wait("voice form", `document.querySelector("#v-provider") !== null && document.querySelector("#v-model").options.length > 0`)
	br.setInput("#v-provider", "elevenlabs")
	br.wait("elevenlabs models", `[...document.querySelector("#v-model").options].some(o => o.value === "eleven_multilingual_v2")`)
	br.setInput("#v-model", "eleven_multilingual_v2")
	br.wait("cloning offered", `!document.querySelector('input[value=clone]').disabled`)
	br.click(`input[value=clone]`)
	br.wait("file input", `document.querySelector("#v-file") !== null`)
	br.do("choose the sample", chromedp.SetUploadFiles(chromedp.CSS("#v-file"), []string{file}))
	br.wait("sample chosen", `document.body.innerText.includes("me.wav")`)
	br.setInput("#v-title", "My cloned voice")
	br.clickText("Create voice")
	br.wait("cloned voice listed", `[...document.querySelectorAll("tbody tr")].some(tr => tr.innerText.includes("My cloned voice") && tr.innerText.includes("(cloned)"))`)

	// A sample recorded in the page (the fake microphone's tone), which
	// the page encodes as WAV before uploading it.
	br.wait("cloning still chosen", `document.querySelector("#v-file") !== null`)
	br.clickText("Record a sample")
	br.wait("recording", `[...document.querySelectorAll("button")].some(b => b.textContent === "Stop recording")`)
	br.do("record a moment", chromedp.Sleep(1500*time.Millisecond))
	br.clickText("Stop recording")
	br.wait("recording encoded", `document.body.innerText.includes("recording.wav")`)
	br.setInput("#v-title", "My recorded voice")
	br.clickText("Create voice")
	br.wait("recorded voice listed", `[...document.querySelectorAll("tbody tr")].some(tr => tr.innerText.includes("My recorded voice") && tr.innerText.includes("(cloned)"))`)
	if n := c.el.CallsTo("/v1/voices/add"); n != 2 {
		t.Errorf("clone calls to the provider: %d, want 2", n)
	}
	var media []struct {
		MediaType string `json:"media_type"`
		Duration  int64  `json:"duration_ms"`
	}
	var voices struct {
		Data []struct {
			Title   string `json:"title"`
			MediaID string `json:"media_id"`
		} `json:"data"`
	}
	c.do("GET", "/v1/voices", "acme", nil).json(t, &voices)
	for _, v := range voices.Data {
		var m struct {
			MediaType string `json:"media_type"`
			Duration  int64  `json:"duration_ms"`
		}
		c.do("GET", "/v1/media/"+v.MediaID, "acme", nil).json(t, &m)
		media = append(media, m)
		if v.Title == "My recorded voice" && (m.MediaType != "audio/wav" || m.Duration < 500) {
			t.Errorf("the recorded sample was stored as %+v; want about 1.5 s of WAV", m)
		}
	}
	if len(media) != 2 {
		t.Errorf("media of the cloned voices: %+v", media)
	}
	br.axeCheck("voices (clone)")
	br.noProblems("clone")
}
