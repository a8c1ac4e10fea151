package dashboard

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDashboardTurnTimings: a realtime context's row in the logs view
// shows its turn timing (time to first audio, the text wait its
// aggregation cost, and the rest: provider and gateway), the figures of
// its request-log row, which the context's metrics message also gave.
func TestDashboardTurnTimings(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := harness.Start(t, uiConfig)
	br := newBrowser(t)

	// A context spoken through eSpeak, its text in two pieces: the first
	// waits in the sentence buffer until the second ends the sentence.
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("t", "model", "espeak/espeak-ng", "voice", "en"))
	started := rc.Expect("started", "t")
	rc.Send(harness.TextMsg("t", "A turn of a voice agent, "))
	rc.Send(harness.TextMsg("t", "timed on the dashboard."))
	rc.Send(harness.ControlMsg("close", "t"))
	msgs := rc.Until(harness.IsType("done", "t"))
	var metrics harness.RealtimeMsg
	for _, m := range msgs {
		if m.Type == "metrics" {
			metrics = m
		}
	}
	if metrics.TTFA == nil || metrics.TextWaitMs == nil {
		t.Fatalf("metrics %s", metrics.Raw)
	}
	tg.FlushLogs()
	var page struct {
		Data []struct {
			RequestID  string `json:"request_id"`
			TTFA       int64  `json:"time_to_first_audio_ms"`
			TextWaitMS int64  `json:"text_wait_ms"`
		} `json:"data"`
	}
	r := tg.Do("GET", "/v1/logs?limit=5", "acme", nil)
	r.JSON(t, &page)
	if len(page.Data) == 0 || page.Data[0].RequestID != started.RequestID {
		t.Fatalf("logs %s, want the context's row %s first", r.Body, started.RequestID)
	}
	row := page.Data[0]
	if row.TTFA != *metrics.TTFA || row.TextWaitMS != *metrics.TextWaitMs {
		t.Errorf("row: first audio %d ms, text wait %d ms; metrics said %d and %d", row.TTFA, row.TextWaitMS, *metrics.TTFA, *metrics.TextWaitMs)
	}

	br.expectFailure("/ui/api/session", 401, 1)
	br.do("open", chromedp.Navigate(tg.Base+"/ui/"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.wait("the key field focused", `document.activeElement === document.querySelector("#key")`)
	br.press(tg.Keys["acme"])
	br.press(kb.Enter)
	br.wait("the context's row", fmt.Sprintf(`document.querySelector('tr[data-request-id=%q] button') !== null`, row.RequestID))
	br.click(fmt.Sprintf(`tr[data-request-id=%q] button`, row.RequestID))
	br.wait("turn timing", `document.querySelector('dl[aria-label="Turn timing"]') !== null`)
	for field, want := range map[string]int64{"time_to_first_audio_ms": row.TTFA, "text_wait_ms": row.TextWaitMS,
		"first_segment_to_audio_ms": max(0, row.TTFA-row.TextWaitMS)} {
		var got string
		br.js(fmt.Sprintf(`document.querySelector('dd[data-field=%q]').textContent`, field), &got)
		if got != strconv.FormatInt(want, 10) {
			t.Errorf("%s: the page shows %q, want %d", field, got, want)
		}
	}
	br.axeCheck("logs, a realtime row")
	br.noProblems("turn timing")
}
