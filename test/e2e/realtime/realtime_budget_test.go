package realtime

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestRealtimeMoneyBudget: a realtime context reserves money from the
// organization's budget per segment, before the segment is spoken, as a
// clip reserves its quote: with a budget of $0.0006 a day (40 characters
// of OpenAI's tts-1 at $15 per million), the first 30-character sentence
// is spoken and the second, which would pass the budget, is refused with
// budget_exceeded on the socket and never reaches OpenAI. What the first
// spent stays spent: a new context's first sentence is refused too.
func TestRealtimeMoneyBudget(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  openai:
    plugin: voxgate-openai
    base_url: `+oai.BaseURL()+`
    api_key: `+openai.Key+`
    managed: true
orgs:
  acme:
    budget: {cost: 0.0006, period: day}
    providers:
      openai: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, openai.Key)
	first, second := "Thirty characters, give or ta", "ke a few more than were spoken."
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("m", "model", "openai/tts-1", "voice", "alloy", "output", map[string]any{"format": "pcm"}))
	rc.Expect("started", "m")
	rc.Send(harness.TextMsg("m", first+". "))
	rc.Until(harness.IsType("audio", "m"))
	rc.Send(harness.TextMsg("m", second+" "))
	rc.Send(harness.ControlMsg("close", "m"))
	msgs := rc.Until(harness.IsType("done", "m"))
	done, errMsg := msgs[len(msgs)-1], msgs[len(msgs)-2]
	if done.Reason != "error" || errMsg.Type != "error" || errMsg.Code != "budget_exceeded" || !strings.Contains(string(errMsg.Raw), `"status":429`) {
		t.Fatalf("the second sentence: %v", harness.RawOf(msgs))
	}
	if n := oai.Calls(); n != 1 {
		t.Errorf("OpenAI got %d requests, want 1 (the second sentence was refused before it)", n)
	}
	rc.Send(harness.StartMsg("n", "model", "openai/tts-1", "voice", "alloy", "output", map[string]any{"format": "pcm"}))
	rc.Expect("started", "n")
	rc.Send(harness.TextMsg("n", first+". "))
	rc.Send(harness.ControlMsg("close", "n"))
	msgs = rc.Until(harness.IsType("done", "n"))
	if errMsg := msgs[len(msgs)-2]; errMsg.Code != "budget_exceeded" {
		t.Errorf("a new context after the budget was spent: %v", harness.RawOf(msgs))
	}
}
