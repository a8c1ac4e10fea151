package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/edge/ui"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// The dashboard, driven in Debian's headless chromium as a person would
// use it: sign in with the keyboard (a wrong key first), find the rows of
// requests made before, filter them by status, provider, time and parent
// request (another organization's conversation shows nothing), open a
// conversation's turns, play a clip in the playground and watch the
// highlighted word advance, try the download-only formats, create and
// delete a voice, read usage per provider and day, look at providers;
// move between the views with Tab and Enter, every element used reachable
// by Tab and showing its focus; axe-core in the page after each view; no
// console errors and no failed requests but the few the test provokes;
// screenshots at 1280 and 390 pixels wide. Then an expired session and a
// revoked key return to sign-in.
//
// Screenshots go to the test's artifact directory (t.ArtifactDir: kept
// with `go test -artifacts`, a temporary directory otherwise), and with
// VOXGATE_UI_DOCS=1 the README's two also to docs/.

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
	// problems are console errors, uncaught exceptions and failed
	// requests.
	problems []string
	// expected are the failed requests the test provokes on purpose,
	// until the next noProblems.
	expected []expectedFailure
	// unfocused are elements already reported for showing no focus.
	unfocused map[string]bool
	dir       string
	docs      string
	axe       string
}

// expectedFailure allows up to n failed requests to one path (no query)
// with one status: chromium logs each as an error of source "network".
type expectedFailure struct {
	path   string
	status int
	n      int
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
	axe, err := os.ReadFile(harness.Path(t, "gateway", "edge", "ui", "web", "node_modules", "axe-core", "axe.min.js"))
	if exe == "" || err != nil {
		msg := fmt.Sprintf("needs chromium (found %q) and axe-core (%v): run `make build`", exe, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b := &browser{t: t, dir: t.ArtifactDir(), axe: string(axe), unfocused: map[string]bool{}}
	if os.Getenv("VOXGATE_UI_DOCS") != "" {
		b.docs = harness.Path(t, "docs")
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

// failedStatus finds the status in chromium's message for a failed
// request ("Failed to load resource: the server responded with a status
// of 401 (Unauthorized)").
var failedStatus = regexp.MustCompile(`status of (\d{3})`)

// listen collects console errors, exceptions, and requests that failed
// (the browser logs them with source "network"), except those the test
// said it provokes (expectFailure).
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
		if e.Entry.Level != log.EntryLevelError {
			return
		}
		if e.Entry.Source == log.EntrySourceNetwork && b.provoked(e.Entry) {
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

// provoked reports whether a failed request is one the test expects, and
// counts it against the allowance.
func (b *browser) provoked(e *log.Entry) bool {
	m := failedStatus.FindStringSubmatch(e.Text)
	u, err := url.Parse(e.URL)
	if m == nil || err != nil {
		return false
	}
	status, _ := strconv.Atoi(m[1])
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.expected {
		x := &b.expected[i]
		if x.path == u.Path && x.status == status && x.n > 0 {
			x.n--
			return true
		}
	}
	return false
}

// expectFailure allows up to n failed requests to path with status, from
// now until the next noProblems: the wrong key, the sign-in page's check
// for a session, the requests that meet an expired session.
func (b *browser) expectFailure(path string, status, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, expectedFailure{path: path, status: status, n: n})
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
			// The README's pictures: what the first screen shows, from
			// the top of the page (keyboard steps may have scrolled it).
			var view []byte
			b.js(`window.scrollTo(0, 0)`, nil)
			b.do("screenshot for docs", chromedp.Sleep(100*time.Millisecond), chromedp.Steps(func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
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

// noProblems fails on what the browser reported since the last call, and
// ends the allowances of expectFailure.
func (b *browser) noProblems(when string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("%s: %s", when, p)
	}
	b.problems = nil
	b.expected = nil
}

// focusJS describes the focused element: a name for messages, whether it
// shows its focus (an outline at least 2 px wide whose colour has 3:1
// contrast with the background around it: the parent's, or the element's
// own for an outline drawn inside), whether it is the first element a
// tabOrder walk reached (the walk has come round), and which of WANT (a
// JSON array of selectors, or text=... for an element with that text) it
// matches. null: the focus is on no element of the page.
const focusJS = `(() => {
	const want = WANT;
	const el = document.activeElement;
	if (!el || el === document.body || el === document.documentElement) return null;
	const cs = getComputedStyle(el);
	const rgba = (c) => { const m = (c.match(/[\d.]+/g) || []).map(Number); return m.length === 3 ? m.concat(1) : m.length === 4 ? m : [0, 0, 0, 0]; };
	const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const background = (n) => { for (; n && n.nodeType === 1; n = n.parentElement) { const c = rgba(getComputedStyle(n).backgroundColor); if (c[3] > 0) return c; } return [255, 255, 255, 1]; };
	const around = background(parseFloat(cs.outlineOffset) < 0 ? el : el.parentElement);
	const a = lum(rgba(cs.outlineColor)), b = lum(around);
	const contrast = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
	const text = (el.getAttribute("aria-label") || el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 40);
	const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.getAttribute("href") ? "[href=" + el.getAttribute("href") + "]" : "") + (text ? ' "' + text + '"' : "");
	let first = false;
	if (window.__kbFirst === undefined) window.__kbFirst = el; else first = window.__kbFirst === el;
	return {name, first,
		visible: cs.outlineStyle !== "none" && (parseFloat(cs.outlineWidth) || 0) >= 2 && contrast >= 3,
		style: cs.outlineStyle + " " + cs.outlineWidth + " " + cs.outlineColor + " on rgb(" + around.slice(0, 3).join(", ") + "), " + contrast.toFixed(1) + ":1",
		matches: want.filter((w) => w.startsWith("text=") ? el.textContent.trim() === w.slice(5) : el.matches(w))};
})()`

type focusState struct {
	Name    string   `json:"name"`
	First   bool     `json:"first"`
	Visible bool     `json:"visible"`
	Style   string   `json:"style"`
	Matches []string `json:"matches"`
}

// press sends keys to the focused element, as typing them would.
func (b *browser) press(keys string, mods ...chromedp.Modifier) {
	b.t.Helper()
	var opts []chromedp.KeyOption
	if len(mods) > 0 {
		opts = append(opts, chromedp.KeyModifiers(mods...))
	}
	b.do(fmt.Sprintf("press %q", keys), chromedp.KeyEvent(keys, opts...))
}

// focused describes the focused element (nil: none), failing the test
// the first time an element shows no focus.
func (b *browser) focused(want []string) *focusState {
	b.t.Helper()
	w, _ := json.Marshal(want)
	var st *focusState
	b.js(strings.Replace(focusJS, "WANT", string(w), 1), &st)
	if st != nil && !st.Visible && !b.unfocused[st.Name] {
		b.unfocused[st.Name] = true
		b.t.Errorf("%s shows no visible focus: outline %s", st.Name, st.Style)
	}
	return st
}

// tabTo moves the focus with Tab (Shift+Tab if back) to the element sel
// matches (a selector, or text=...), as a keyboard user would; every
// element on the way must show its focus.
func (b *browser) tabTo(sel string, back bool) {
	b.t.Helper()
	var mods []chromedp.Modifier
	if back {
		mods = append(mods, chromedp.ModifierShift)
	}
	var path []string
	for range 300 {
		b.press(kb.Tab, mods...)
		st := b.focused([]string{sel})
		if st == nil {
			path = append(path, "(none)")
			continue
		}
		path = append(path, st.Name)
		if len(st.Matches) > 0 {
			return
		}
	}
	b.t.Fatalf("%s: not reached with the keyboard; the focus went through %s", sel, strings.Join(path, ", "))
}

// tabOrder walks the page with Tab from its start until the focus leaves
// the page or comes round to the first element again: every element of
// want (selectors, or text=...) must be reached, and each element reached
// must show its focus.
func (b *browser) tabOrder(view string, want ...string) {
	b.t.Helper()
	// The walk starts from a mark before everything, removed once left.
	b.js(`(() => { delete window.__kbFirst; const m = document.createElement("span"); m.id = "kb-start"; m.tabIndex = -1;
		document.body.prepend(m); m.focus(); return true })()`, nil)
	reached := map[string]bool{}
	steps := 0
	for ; steps < 400; steps++ {
		b.press(kb.Tab)
		if steps == 0 {
			b.js(`document.getElementById("kb-start").remove(); true`, nil)
		}
		st := b.focused(want)
		if st == nil || st.First {
			break
		}
		for _, m := range st.Matches {
			reached[m] = true
		}
	}
	for _, w := range want {
		if !reached[w] {
			b.t.Errorf("%s: %s is not reached with Tab (%d steps)", view, w, steps)
		}
	}
	b.t.Logf("%s: %d stops of Tab", view, steps)
}

// navigate changes the view with the keyboard: Shift+Tab back to its link
// in the navigation, then Enter; the focus moves to the view's content.
func (b *browser) navigate(view string) {
	b.t.Helper()
	b.tabTo(fmt.Sprintf(`nav a[href="#/%s"]`, view), true)
	b.press(kb.Enter)
	b.wait("open "+view, fmt.Sprintf(`document.querySelector("nav a[aria-current=page]") && document.querySelector("nav a[aria-current=page]").getAttribute("href") === "#/%s"`, view))
	b.wait(view+": the focus on its content", `document.activeElement === document.getElementById("main")`)
}

// uiLogPage is a page of GET /v1/logs.
type uiLogPage struct {
	Data []struct {
		RequestID string `json:"request_id"`
		Provider  string `json:"provider"`
	} `json:"data"`
	HasMore bool `json:"has_more"`
}

func (p uiLogPage) ids() []string {
	ids := []string{}
	for _, r := range p.Data {
		ids = append(ids, r.RequestID)
	}
	return ids
}

// shownRows are the request ids of the log rows the page shows, in order.
func (b *browser) shownRows() []string {
	b.t.Helper()
	ids := []string{}
	b.js(`[...document.querySelectorAll("tbody tr[data-request-id]")].map(tr => tr.dataset.requestId)`, &ids)
	return ids
}

// waitRows waits until the logs view has loaded and shows exactly want.
func (b *browser) waitRows(what string, want []string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var loading bool
		b.js(`document.querySelector(".logs p[role=status]").textContent.startsWith("Loading")`, &loading)
		got := b.shownRows()
		if !loading && slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: the page shows rows %v, want %v", what, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setLocalTime sets a datetime-local input to the instant iso, written in
// the browser's own time zone as a person would pick it.
func (b *browser) setLocalTime(sel string, at time.Time) {
	b.t.Helper()
	var local string
	b.js(fmt.Sprintf(`(d => new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19))(new Date(%q))`, at.UTC().Format(time.RFC3339)), &local)
	b.setInput(sel, local)
}

func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := harness.Start(t, uiConfig)
	br := newBrowser(t)

	// Requests made before the browser: a clip, a failure, a conversation
	// (two turns), each with a request id the test knows; and globex's
	// request and conversation, which must never show.
	ids := map[string]string{"clip": "ui-clip-0001", "bad": "ui-bad-0002", "conv": "ui-conv-0003", "globex": "ui-globex-0004",
		"mixed": "ui-mixed-0006", "globexConv": "ui-globex-conv-0007"}
	speech := `{"model":"espeak/espeak-ng","voice":"en","text":"Logged before the browser came."}`
	conversation := `{"model":"espeak/espeak-ng","turns":[{"voice":"en","text":"First turn."},{"voice":"de","text":"Zweiter Zug."}]}`
	if r := tg.Do("POST", "/v1/audio/speech", "acme", speech, "X-Request-Id", ids["clip"]); r.Status != 200 {
		t.Fatalf("clip: %d %s", r.Status, r.Body)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", `{"model":"espeak/espeak-ng","voice":"no-such-voice","text":"x"}`, "X-Request-Id", ids["bad"]); r.Status < 400 {
		t.Fatalf("bad: %d", r.Status)
	}
	if r := tg.Do("POST", "/v1/audio/conversation", "acme", conversation, "X-Request-Id", ids["conv"]); r.Status != 200 {
		t.Fatalf("conversation: %d %s", r.Status, r.Body)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "globex", speech, "X-Request-Id", ids["globex"]); r.Status != 200 {
		t.Fatalf("globex: %d", r.Status)
	}
	if r := tg.Do("POST", "/v1/audio/conversation", "globex", conversation, "X-Request-Id", ids["globexConv"]); r.Status != 200 {
		t.Fatalf("globex conversation: %d %s", r.Status, r.Body)
	}
	globexVoice := tg.Do("POST", "/v1/voices", "globex", `{"title":"Globex Secret Voice","provider":"espeak","model":"espeak-ng","voice_id":"en"}`)
	if globexVoice.Status != 201 {
		t.Fatalf("globex voice: %d %s", globexVoice.Status, globexVoice.Body)
	}
	// A row under another provider (a conversation whose turns used
	// several), and older rows a second apart: enough for a second page,
	// and for a since/until window.
	tg.Core.Logs().Record(store.LogRow{RequestID: ids["mixed"], OrgID: "acme", TS: time.Now().Add(-30 * time.Minute),
		Path: "/v1/audio/conversation", Status: 200, Provider: "mixed", CharCount: 20, CreditsUsed: 2, LatencyMS: 40})
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 60 {
		tg.Core.Logs().Record(store.LogRow{RequestID: fmt.Sprintf("ui-old-%04d", i), OrgID: "acme", TS: old.Add(-time.Duration(i) * time.Second),
			Path: "/v1/audio/speech", Status: 200, Provider: "espeak", Model: "espeak-ng", VoiceID: "en", CharCount: 10, CreditsUsed: 1, LatencyMS: 5})
	}
	tg.FlushLogs()
	apiRows := func(org, q string) uiLogPage {
		t.Helper()
		var p uiLogPage
		if r := tg.Do("GET", "/v1/logs?limit=50&"+q, org, nil); r.Status != 200 {
			t.Fatalf("logs %s: %d %s", q, r.Status, r.Body)
		} else {
			r.JSON(t, &p)
		}
		return p
	}
	globexTurns := apiRows("globex", "parent_request_id="+ids["globexConv"]).ids()
	if len(globexTurns) != 2 {
		t.Fatalf("globex's conversation has turns %v, want 2", globexTurns)
	}
	foreign := func(when string) {
		t.Helper()
		h := br.html()
		for _, s := range append([]string{ids["globex"], "Globex Secret Voice", "globex"}, globexTurns...) {
			if strings.Contains(h, s) {
				t.Errorf("%s: the page shows %q of another organization", when, s)
			}
		}
	}

	// Sign in with the keyboard: the key field has the focus; a wrong key
	// first, then, its text selected, the right one typed over it. Both
	// are sent with Enter.
	// Two 401s at /ui/api/session: the page's check for a session (GET,
	// none yet) and the wrong key (POST).
	br.expectFailure("/ui/api/session", 401, 2)
	br.do("open", chromedp.Navigate(tg.Base+"/ui/"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.wait("the key field focused", `document.activeElement === document.querySelector("#key")`)
	br.axeCheck("sign-in")
	br.press("vxk_" + strings.Repeat("x", 43))
	br.tabOrder("sign-in", "#key", "form button[type=submit]")
	br.tabTo("#key", true)
	br.press(kb.Enter)
	br.wait("wrong key message", `document.querySelector("[role=alert]") && document.querySelector("[role=alert]").textContent.includes("not valid")`)
	br.wait("the wrong key selected", `(k => document.activeElement === k && k.selectionStart === 0 && k.selectionEnd === k.value.length && k.value.length > 0)(document.querySelector("#key"))`)
	br.press(tg.Keys["acme"])
	br.press(kb.Enter)

	// Logs: the rows of the requests made before.
	br.wait("log rows", fmt.Sprintf(`document.querySelector('tr[data-request-id=%q]') && document.querySelector('tr[data-request-id=%q]') && document.querySelector('tr[data-request-id=%q]')`, ids["clip"], ids["bad"], ids["conv"]))
	br.wait("the focus on the view", `document.activeElement === document.getElementById("main")`)
	br.noProblems("sign-in")
	var stored []string
	br.js(`Object.keys(localStorage).concat(Object.keys(sessionStorage))`, &stored)
	var cookieVisible bool
	br.js(`document.cookie.includes("voxgate_session")`, &cookieVisible)
	if len(stored) > 0 || cookieVisible {
		t.Errorf("the session is reachable from the page: storage %v, document.cookie %v", stored, cookieVisible)
	}
	if strings.Contains(br.html(), tg.Keys["acme"]) {
		t.Error("the key is still in the page after sign-in")
	}
	foreign("logs")

	// Paging: 50 rows, then the next page through the cursor, with the
	// keyboard; the focus goes on to the first row of the new page.
	if shown := br.shownRows(); len(shown) != 50 {
		t.Errorf("first page: %d rows, want 50", len(shown))
	}
	br.tabTo("text=Load more", false)
	br.press(kb.Enter)
	br.wait("second page", `document.querySelectorAll("tbody tr").length === 66 && document.querySelector('tr[data-request-id="ui-old-0059"]') !== null`)
	br.wait("the focus on the second page", `document.activeElement.closest("tr") === document.querySelectorAll("tbody tr")[50]`)

	// Filters. Status, typed into its field and sent with Enter.
	var badStatus int
	br.js(fmt.Sprintf(`Number(document.querySelector('tr[data-request-id=%q] .status').textContent)`, ids["bad"]), &badStatus)
	br.tabTo("#f-status", true)
	br.press(fmt.Sprint(badStatus))
	br.press(kb.Enter)
	want := apiRows("acme", fmt.Sprintf("status=%d", badStatus)).ids()
	if !slices.Equal(want, []string{ids["bad"]}) {
		t.Errorf("status %d: the API answers %v", badStatus, want)
	}
	br.waitRows("status filter", want)
	br.clickText("Reset")
	br.wait("unfiltered", fmt.Sprintf(`document.querySelector('tr[data-request-id=%q]') !== null`, ids["conv"]))

	// Provider: the conversation under "mixed" alone; then eSpeak's rows,
	// without it.
	br.setInput("#f-provider", "mixed")
	br.clickText("Apply filters")
	want = apiRows("acme", "provider=mixed").ids()
	if !slices.Equal(want, []string{ids["mixed"]}) {
		t.Errorf("provider mixed: the API answers %v", want)
	}
	br.waitRows("provider filter (mixed)", want)
	br.setInput("#f-provider", "espeak")
	br.clickText("Apply filters")
	espeak := apiRows("acme", "provider=espeak")
	br.waitRows("provider filter (espeak)", espeak.ids())
	for _, r := range espeak.Data {
		if r.Provider != "espeak" || r.RequestID == ids["mixed"] {
			t.Errorf("provider espeak: the API answers row %+v", r)
		}
	}
	var providers []string
	br.js(`[...new Set([...document.querySelectorAll("tbody tr")].map(tr => tr.children[3].textContent))]`, &providers)
	if !slices.Equal(providers, []string{"espeak"}) {
		t.Errorf("provider espeak: the rows shown are of %v", providers)
	}
	br.clickText("Reset")

	// Since and until, in the browser's time zone: the old rows of ten
	// seconds, until excluded.
	since, until := old.Add(-20*time.Second), old.Add(-10*time.Second)
	br.setLocalTime("#f-since", since)
	br.setLocalTime("#f-until", until)
	br.clickText("Apply filters")
	want = apiRows("acme", "since="+url.QueryEscape(since.UTC().Format(time.RFC3339))+"&until="+url.QueryEscape(until.UTC().Format(time.RFC3339))).ids()
	var window []string
	for i := 11; i <= 20; i++ {
		window = append(window, fmt.Sprintf("ui-old-%04d", i))
	}
	if !slices.Equal(want, window) {
		t.Errorf("since/until: the API answers %v, want %v", want, window)
	}
	br.waitRows("since/until filter", want)
	br.clickText("Reset")

	// Parent request: the conversation's turns; another organization's
	// conversation shows nothing, though it has turns.
	br.setInput("#f-parent", ids["conv"])
	br.clickText("Apply filters")
	want = apiRows("acme", "parent_request_id="+ids["conv"]).ids()
	if len(want) != 2 {
		t.Errorf("the conversation's turns: the API answers %v", want)
	}
	br.waitRows("parent filter", want)
	br.setInput("#f-parent", ids["globexConv"])
	br.clickText("Apply filters")
	br.waitRows("parent filter (another organization)", []string{})
	br.wait("nothing matches", `document.querySelector(".logs .empty") && document.querySelector(".logs .empty").textContent.includes("No request-log rows match")`)
	foreign("logs, filtered by another organization's conversation")
	br.clickText("Reset")
	br.wait("unfiltered", fmt.Sprintf(`document.querySelector('tr[data-request-id=%q]') !== null`, ids["conv"]))

	// The conversation's turns, opened with the keyboard.
	br.tabTo(fmt.Sprintf(`tr[data-request-id=%q] button`, ids["conv"]), false)
	br.press(kb.Enter)
	br.wait("conversation turns", `document.querySelectorAll(".turns li").length === 2`)
	br.wait("the focus on the detail", `document.activeElement === document.querySelector("#detail-title")`)
	var detail string
	br.js(`document.querySelector(".detail").innerText`, &detail)
	for _, part := range []string{ids["conv"], "Moderation", "Conversation turns", "Decision"} {
		if !strings.Contains(detail, part) {
			t.Errorf("conversation detail lacks %q:\n%s", part, detail)
		}
	}
	br.axeCheck("logs")
	br.tabOrder("logs", `a.skip`, `nav a[href="#/logs"]`, `nav a[href="#/usage"]`, `nav a[href="#/voices"]`, `nav a[href="#/lexicon"]`, `nav a[href="#/playground"]`,
		`nav a[href="#/providers"]`, "text=Sign out", "#f-provider", "#f-status", "#f-since", "#f-until", "#f-parent", "text=Apply filters", "text=Reset",
		`.actions input[type=checkbox]`, `.scroll[role=region]`, `tr[data-request-id] button`, "text=Close", ".turns button", "text=Load more")
	br.screenshots("logs")
	// Closing the detail gives the focus back to the row that opened it.
	br.tabTo("text=Close", false)
	br.press(kb.Enter)
	br.wait("detail closed", fmt.Sprintf(`document.querySelector(".detail") === null && document.activeElement === document.querySelector('tr[data-request-id=%q] button')`, ids["conv"]))

	// Live tail: a request made now appears without a reload.
	br.click(`.actions input[type=checkbox]`)
	if r := tg.Do("POST", "/v1/audio/speech", "acme", speech, "X-Request-Id", "ui-live-0005"); r.Status != 200 {
		t.Fatalf("live: %d", r.Status)
	}
	tg.FlushLogs()
	br.wait("live row", `document.querySelector('tr[data-request-id="ui-live-0005"]') !== null`)
	br.click(`.actions input[type=checkbox]`)
	br.noProblems("logs")

	// Playground: speak (with the keyboard), hear, see the words light up
	// in turn.
	br.navigate("playground")
	br.wait("voices loaded", `document.querySelector("#pg-voice") && document.querySelector("#pg-voice").value !== ""`)
	var formats []struct {
		Value string `json:"value"`
		Text  string `json:"text"`
	}
	br.js(`[...document.querySelectorAll("#pg-format option")].map(o => ({value: o.value, text: o.textContent}))`, &formats)
	var offered []string
	for _, f := range formats {
		offered = append(offered, f.Value)
		// Chromium plays WAV, MP3, Ogg Opus and FLAC; the raw formats have
		// no header to play from.
		raw := f.Value == "pcm" || f.Value == "ulaw" || f.Value == "alaw"
		if strings.Contains(f.Text, "download only") != raw {
			t.Errorf("format %s is offered as %q", f.Value, f.Text)
		}
	}
	if want := []string{"wav", "mp3", "opus", "flac", "pcm", "ulaw", "alaw"}; !slices.Equal(offered, want) {
		t.Errorf("formats offered: %v, want %v", offered, want)
	}
	br.setInput("#pg-text", "One two three four five six seven eight nine ten eleven twelve.")
	br.tabTo("text=Speak", false)
	br.press(kb.Enter)
	br.wait("audio ready", `(() => { const a = document.querySelector("audio"); return a && isFinite(a.duration) && a.duration > 0 })()`)
	br.wait("the focus still on Speak", `document.activeElement.textContent === "Speak"`)
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
	if !strings.HasPrefix(download, "blob:") || !strings.Contains(curl, "/v1/audio/speech/with-timestamps") || !strings.Contains(curl, "$VOXGATE_KEY") || strings.Contains(curl, tg.Keys["acme"]) {
		t.Errorf("download %q, curl %q", download, curl)
	}
	br.axeCheck("playground")
	br.tabOrder("playground", "#pg-provider", "#pg-model", "#pg-voice", "#pg-format", "#pg-speed", ".field input[type=checkbox]", "#pg-text",
		"text=Speak", "a[download]", "pre.curl", "text=Copy command")
	br.screenshots("playground")
	// Ogg Opus plays in the page too; raw PCM is a download, and the page
	// says why it does not play.
	br.setInput("#pg-format", "opus")
	br.clickText("Speak")
	br.wait("opus clip", `document.querySelector('a[download="voxgate-speech.opus"]') && (a => a && isFinite(a.duration) && a.duration > 0)(document.querySelector("audio"))`)
	br.setInput("#pg-format", "pcm")
	br.wait("download-only hint", `document.querySelector("#pg-format-hint").textContent.startsWith("Download only")`)
	br.clickText("Speak")
	br.wait("pcm clip", `document.querySelector('a[download="voxgate-speech.pcm"]') && document.querySelector("audio") === null && document.querySelector(".download-only").textContent.includes("cannot play") && document.querySelector(".word.current") === null`)
	br.js(`document.querySelector("a[download]").getAttribute("href")`, &download)
	if !strings.HasPrefix(download, "blob:") {
		t.Errorf("pcm download %q", download)
	}
	br.axeCheck("playground (download only)")
	br.screenshots("playground-download-only")
	br.noProblems("playground")

	// Voices: create one, then delete it with the keyboard.
	br.navigate("voices")
	br.wait("voice form", `document.querySelector("#v-voice") && document.querySelector("#v-voice").value !== ""`)
	br.setInput("#v-title", "Browser Narrator")
	br.setInput("#v-tags", "ui, test")
	br.clickText("Create voice")
	br.wait("voice created", `[...document.querySelectorAll("tbody th")].some(th => th.textContent === "Browser Narrator")`)
	foreign("voices")
	br.axeCheck("voices")
	br.tabOrder("voices", "#v-title", "#v-provider", "#v-model", "input[name=v-source]", "#v-voice", "#v-tags", "#v-desc", "text=Create voice", "button.danger")
	br.screenshots("voices")
	br.js(`window.confirm = () => true; true`, nil)
	br.tabTo(`button.danger[aria-label="Delete Browser Narrator"]`, false)
	br.press(kb.Enter)
	br.wait("voice deleted", `![...document.querySelectorAll("tbody th")].some(th => th.textContent === "Browser Narrator") && document.body.innerText.includes("Deleted")`)
	br.wait("the focus after the delete", `document.activeElement === document.querySelector("#create-title")`)
	var left struct {
		Data []struct{ Title string } `json:"data"`
	}
	tg.Do("GET", "/v1/voices", "acme", nil).JSON(t, &left)
	if len(left.Data) != 0 {
		t.Errorf("voices left after the delete: %+v", left.Data)
	}
	br.noProblems("voices")

	// Usage: requests, characters, credits and spend, latency p50 and
	// p95 and the error rate, each per provider and day, with a table for each
	// chart that says what the API says.
	br.navigate("usage")
	br.wait("usage charts", `document.querySelectorAll("figure.chart svg[role=img]").length === 7 && document.querySelector(".kpi") !== null`)
	foreign("usage")
	checkUsageCharts(t, tg, br)
	br.tabTo(`figure[data-chart="error-rate"] summary`, false)
	br.press(kb.Enter)
	br.wait("error-rate table open", `document.querySelector('figure[data-chart="error-rate"] details').open`)
	br.axeCheck("usage")
	br.tabOrder("usage", "#u-range", "figure.chart summary", `figure[data-chart="error-rate"] .scroll[role=region]`)
	br.screenshots("usage")
	br.navigate("providers")
	br.wait("catalog", `document.body.innerText.includes("espeak")`)
	br.axeCheck("providers")
	br.tabOrder("providers", ".scroll[role=region]", "text=Sign out")
	br.screenshots("providers")
	// The skip link moves the focus to the content and stays on the view.
	br.tabTo("a.skip", true)
	br.press(kb.Enter)
	br.wait("skipped to the content", `document.activeElement === document.getElementById("main") && document.querySelector("nav a[aria-current=page]").getAttribute("href") === "#/providers"`)
	br.noProblems("usage and providers")

	// An expired session returns to sign-in and says why.
	expired, _ := ui.NewSessions(nil, tg.Core.Store().Secret(), time.Minute, func() time.Time { return time.Now().Add(-time.Hour) }).
		Issue(auth.Principal{OrgID: "acme", KeyID: "whatever"})
	br.do("expire the session", chromedp.Steps(func(ctx context.Context, tt *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tt, network.SetCookie, network.SetCookieParams{Name: ui.CookieName, Value: expired, URL: tg.Base + "/ui/", Path: "/ui/"})
		return chromedp.Void{}, err
	}))
	// The voices view's two requests meet the expired session.
	br.expectFailure("/ui/api/v1/providers", 401, 1)
	br.expectFailure("/ui/api/v1/voices", 401, 1)
	br.js(`location.hash = "#/voices"; true`, nil)
	br.wait("back to sign-in", `document.querySelector("#key") !== null && document.body.innerText.includes("session expired")`)
	br.wait("the key field focused again", `document.activeElement === document.querySelector("#key")`)

	// A revoked key does too.
	key, k, err := tg.Core.CreateKey(context.Background(), "acme", "to revoke", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	br.setInput("#key", key)
	br.click(`form button[type=submit]`)
	br.wait("signed in again", `document.querySelector("nav") !== null`)
	// Sign-in lands on the voices view again: let its requests (the
	// catalog, the voices, the provider's voices) finish first, or those
	// still in flight would meet the revocation too.
	br.wait("the voices view loaded", `document.querySelector("#v-provider option") !== null && document.querySelector("select#v-voice option") !== null && !document.getElementById("main").innerText.includes("Loading…")`)
	if _, err := tg.Core.RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	// The logs view's two requests meet the revoked key.
	br.expectFailure("/ui/api/v1/providers", 401, 1)
	br.expectFailure("/ui/api/v1/logs", 401, 1)
	br.js(`location.hash = "#/logs"; true`, nil)
	br.wait("back to sign-in after revocation", `document.querySelector("#key") !== null && document.body.innerText.includes("revoked")`)
	br.noProblems("expired and revoked")
	t.Logf("screenshots in %s (kept with go test -artifacts)", br.dir)
}

// checkUsageCharts compares the per-provider, per-day latency and error
// rate charts' tables with GET /v1/usage: a cell per provider and day with
// requests, "—" where there were none, and one line per provider.
func checkUsageCharts(t *testing.T, tg *harness.Gateway, br *browser) {
	t.Helper()
	var byProvider, byDay struct {
		Data []struct {
			Day       string  `json:"day"`
			Provider  string  `json:"provider"`
			Requests  int     `json:"requests"`
			ErrorRate float64 `json:"error_rate"`
			Latency   struct {
				P50 float64 `json:"p50"`
				P95 float64 `json:"p95"`
			} `json:"latency_ms"`
		} `json:"data"`
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	q := "since=" + today.AddDate(0, 0, -13).Format(time.DateOnly) + "&until=" + today.AddDate(0, 0, 1).Format(time.DateOnly)
	tg.Do("GET", "/v1/usage?group_by=provider&"+q, "acme", nil).JSON(t, &byProvider)
	tg.Do("GET", "/v1/usage?group_by=provider,day&"+q, "acme", nil).JSON(t, &byDay)
	var providers []string
	for _, g := range byProvider.Data {
		providers = append(providers, g.Provider)
	}
	if !slices.Contains(providers, "espeak") || !slices.Contains(providers, "mixed") {
		t.Errorf("usage by provider: %v, want espeak and mixed", providers)
	}
	type chart struct {
		Columns []string                     `json:"columns"`
		Series  []string                     `json:"series"`
		Cells   map[string]map[string]string `json:"cells"`
	}
	var charts map[string]chart
	br.js(`Object.fromEntries(["latency-p50", "latency-p95", "error-rate"].map(id => {
		const f = document.querySelector('figure[data-chart="' + id + '"]');
		const cells = {};
		f.querySelectorAll("tbody tr").forEach(tr => { cells[tr.dataset.day] = Object.fromEntries([...tr.querySelectorAll("td")].map(td => [td.dataset.series, td.textContent])) });
		return [id, {columns: [...f.querySelectorAll("thead th")].slice(1).map(th => th.textContent),
			series: [...f.querySelectorAll("svg g[data-series]")].map(g => g.dataset.series), cells}];
	}))`, &charts)
	for id, c := range charts {
		if !slices.Equal(c.Columns, providers) || !slices.Equal(c.Series, providers) {
			t.Errorf("%s: columns %v and lines %v, want one per provider %v", id, c.Columns, c.Series, providers)
		}
		want := map[string]map[string]float64{}
		for _, g := range byDay.Data {
			if g.Requests == 0 {
				continue
			}
			if want[g.Day] == nil {
				want[g.Day] = map[string]float64{}
			}
			want[g.Day][g.Provider] = map[string]float64{"latency-p50": g.Latency.P50, "latency-p95": g.Latency.P95, "error-rate": g.ErrorRate * 100}[id]
		}
		if len(c.Cells) != len(want) {
			t.Errorf("%s: days %v, want those of %v", id, c.Cells, want)
		}
		for day, cells := range c.Cells {
			for _, p := range providers {
				v, ok := want[day][p]
				cell := cells[p]
				if !ok {
					if cell != "—" {
						t.Errorf("%s %s %s: %q, want — (no requests)", id, day, p, cell)
					}
					continue
				}
				f, err := strconv.ParseFloat(strings.Fields(strings.ReplaceAll(cell, ",", ""))[0], 64)
				if err != nil || math.Abs(f-v) > 0.051 {
					t.Errorf("%s %s %s: %q, want %.2f", id, day, p, cell, v)
				}
			}
		}
	}
}

// TestDashboardClonesAVoice clones a voice in the browser from an
// uploaded WAV file, on a provider that can clone (the ElevenLabs plugin
// against its fake).
func TestDashboardClonesAVoice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	c := harness.StartCloud(t)
	sample := c.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("A few seconds of my voice for cloning purposes.", "output", map[string]any{"format": "wav"}))
	if sample.Status != 200 {
		t.Fatalf("sample: %d", sample.Status)
	}
	file := filepath.Join(t.TempDir(), "me.wav")
	if err := os.WriteFile(file, sample.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t)
	br.expectFailure("/ui/api/session", 401, 1) // the page's check for a session
	br.do("open", chromedp.Navigate(c.Base+"/ui/#/voices"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.setInput("#key", c.Keys["acme"])
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
	// Consent is required for a clone (docs/provenance.md).
	br.setInput("#v-consent-by", "Ana Díaz")
	br.setInput("#v-consent-statement", "I agree to this clone of my voice.")
	br.clickText("Create voice")
	br.wait("cloned voice listed", `[...document.querySelectorAll("tbody tr")].some(tr => tr.innerText.includes("My cloned voice") && tr.innerText.includes("(cloned)") && tr.innerText.includes("consent: Ana Díaz (self)"))`)

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
	if n := c.ElevenLabs.CallsTo("/v1/voices/add"); n != 2 {
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
	c.Do("GET", "/v1/voices", "acme", nil).JSON(t, &voices)
	for _, v := range voices.Data {
		var m struct {
			MediaType string `json:"media_type"`
			Duration  int64  `json:"duration_ms"`
		}
		c.Do("GET", "/v1/media/"+v.MediaID, "acme", nil).JSON(t, &m)
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
