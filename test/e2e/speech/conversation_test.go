package speech

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

var threeTurns = []any{
	map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "Good morning, how are you today?"},
	map[string]any{"model": "testkit/test", "voice": "beta", "text": "very well thank you"},
	map[string]any{"model": "espeak/espeak-ng", "voice": "en-us", "text": "Let us begin the meeting."},
}

func TestConversationTimelineAndSegments(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": threeTurns, "gapMs": 250, "split": true})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var env harness.ConversationEnvelope
	r.JSON(t, &env)
	total := harness.DecodeAudio(t, env.Audio, env.MediaType)
	if env.MediaType != "audio/wav" {
		t.Errorf("media type %q", env.MediaType)
	}
	// Words are in order, carry their turn, and each turn starts after the
	// previous turn's last word plus the gap.
	wantTurnWords := []int{6, 4, 5}
	counts := make([]int, 3)
	lastEnd := map[int]float64{}
	firstStart := map[int]float64{}
	prev := -1.0
	for _, ts := range env.Timestamps {
		if ts.Start < prev-1e-3 || ts.End < ts.Start || ts.End > total+0.01 {
			t.Fatalf("timestamp %+v out of order or outside the %.3fs clip", ts, total)
		}
		prev = ts.Start
		if counts[ts.TurnIndex] == 0 {
			firstStart[ts.TurnIndex] = ts.Start
		}
		counts[ts.TurnIndex]++
		lastEnd[ts.TurnIndex] = ts.End
	}
	for i, n := range wantTurnWords {
		if counts[i] != n {
			t.Errorf("turn %d has %d words, want %d", i, counts[i], n)
		}
	}
	for i := 1; i < 3; i++ {
		if firstStart[i] < lastEnd[i-1]+0.25-1e-3 {
			t.Errorf("turn %d starts at %.3f, before turn %d's last word (%.3f) plus the gap", i, firstStart[i], i-1, lastEnd[i-1])
		}
	}
	// The clip is the segments plus the gaps, within one frame.
	if len(env.AudioSegments) != 3 || len(env.FailedTurns) != 0 {
		t.Fatalf("%d segments, %d failed", len(env.AudioSegments), len(env.FailedTurns))
	}
	sum := 0.0
	for i, seg := range env.AudioSegments {
		if seg.TurnIndex != i {
			t.Errorf("segment %d has turnIndex %d", i, seg.TurnIndex)
		}
		d := harness.DecodeAudio(t, seg.Audio, seg.MediaType)
		sum += d
		for _, w := range seg.Timestamps {
			if w.Start < 0 || w.End > d+0.01 {
				t.Errorf("segment %d timestamp %+v not relative to the segment (%.3fs)", i, w, d)
			}
		}
	}
	sum += 2 * 0.25
	if math.Abs(sum-total) > 1.0/22050+1e-6 {
		t.Errorf("clip %.6fs, segments plus gaps %.6fs", total, sum)
	}
	if env.ProviderMetadata == nil {
		t.Error("no providerMetadata")
	}
}

func TestConversationFailedTurn(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	turns := []any{threeTurns[0], map[string]any{"model": "espeak/espeak-ng", "voice": "zz-nope", "text": "This voice does not exist."}, threeTurns[2]}

	// split: the request succeeds with what rendered.
	r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns, "split": true})
	if r.Status != 200 {
		t.Fatalf("split: %d %s", r.Status, r.Body)
	}
	var env harness.ConversationEnvelope
	r.JSON(t, &env)
	if len(env.AudioSegments) != 2 || env.AudioSegments[0].TurnIndex != 0 || env.AudioSegments[1].TurnIndex != 2 {
		t.Fatalf("segments %+v", env.AudioSegments)
	}
	if len(env.FailedTurns) != 1 || env.FailedTurns[0].TurnIndex != 1 || env.FailedTurns[0].Error.Code != "provider_rejected_request" ||
		env.FailedTurns[0].Error.TurnIndex == nil || *env.FailedTurns[0].Error.TurnIndex != 1 || env.FailedTurns[0].Error.Provider != "espeak" {
		t.Fatalf("failedTurns %+v", env.FailedTurns)
	}
	for _, ts := range env.Timestamps {
		if ts.TurnIndex == 1 {
			t.Fatalf("timestamps of the failed turn: %+v", ts)
		}
	}
	parent := r.Header.Get("X-Request-Id")

	// Child rows: one per turn, the failed one with its error.
	tg.FlushLogs()
	var p harness.LogPage
	tg.Do("GET", "/v1/logs?parent_request_id="+parent, "acme", nil).JSON(t, &p)
	if len(p.Data) != 3 {
		t.Fatalf("%d child rows", len(p.Data))
	}
	byVoice := map[string]int{}
	for _, row := range p.Data {
		if row.ParentRequestID != parent || row.Provider != "espeak" || row.RequestID == parent {
			t.Errorf("child row %+v", row)
		}
		byVoice[row.VoiceID] = row.Status
		if row.VoiceID == "zz-nope" && (row.ErrorCode != "provider_rejected_request" || row.CreditsUsed != 0) {
			t.Errorf("failed turn row %+v", row)
		}
	}
	if byVoice["en"] != 200 || byVoice["en-us"] != 200 || byVoice["zz-nope"] != 422 {
		t.Errorf("child statuses %v", byVoice)
	}
	var all harness.LogPage
	tg.Do("GET", "/v1/logs?limit=200", "acme", nil).JSON(t, &all)
	parents := 0
	for _, row := range all.Data {
		if row.RequestID == parent {
			parents++
			if row.Status != 200 || row.CharCount != len("Good morning, how are you today?")+len("This voice does not exist.")+len("Let us begin the meeting.") {
				t.Errorf("parent row %+v", row)
			}
		}
	}
	if parents != 1 {
		t.Errorf("%d parent rows", parents)
	}

	// Without split the failed turn fails the request and names the turn.
	r = tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns})
	pb := r.Problem(t, 422, "provider_rejected_request")
	if pb.TurnIndex == nil || *pb.TurnIndex != 1 {
		t.Errorf("turn_index = %v", pb.TurnIndex)
	}
	// Every turn failing fails split mode too.
	r = tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": []any{turns[1]}, "split": true})
	r.Problem(t, 422, "provider_rejected_request")
}

func TestConversationRawAndClientWireShape(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	// Exactly what @speech-sdk/core's generateConversation sends with a
	// shared model.
	body := `{"mode":"conversation","model":"espeak/espeak-ng","turns":[{"voice":"en","text":"Hello there."},{"voice":"de","text":"Guten Tag.","speed":1.2}],"gapMs":300,"volumeDbfs":-20,"output":{"format":"mp3","bitrate":64}}`
	r := tg.Do("POST", "/v1/audio/conversation", "acme", body)
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/mpeg" || len(r.Body) < 1000 {
		t.Fatalf("%d %s %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
	}
	// Per-turn models, mixing providers at different sample rates.
	body = `{"mode":"conversation","turns":[{"model":"espeak/espeak-ng","voice":"en","text":"Hello."},{"model":"testkit/test","voice":"alpha","text":"hi there"}],"gapMs":0,"volumeDbfs":-20}`
	r = tg.Do("POST", "/v1/audio/conversation", "acme", body)
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("mixed: %d %s", r.Status, r.Body)
	}
	if d, rms := harness.PCMSeconds(t, "audio/wav", r.Body); d < 0.5 || rms < 0.01 {
		t.Errorf("mixed conversation %.2fs rms %.3f", d, rms)
	}
}

func TestConversationValidation(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(harness.SpeechConfig, "storage:", "limits: {max_turns: 3, max_conversation_chars: 200}\nstorage:", 1))
	turn := map[string]any{"voice": "en", "text": "hi"}
	mturn := map[string]any{"model": "espeak", "voice": "en", "text": "hi"}
	tests := []struct {
		name   string
		body   any
		status int
		code   string
		field  string
		turn   int
	}{
		{"no turns", map[string]any{"turns": []any{}}, 400, "validation_failed", "turns", -1},
		{"too many turns", map[string]any{"model": "espeak", "turns": []any{turn, turn, turn, turn}}, 400, "validation_failed", "turns", -1},
		{"too many chars", map[string]any{"model": "espeak", "turns": []any{map[string]any{"voice": "en", "text": strings.Repeat("a", 201)}}}, 400, "validation_failed", "turns", -1},
		{"shared and turn model", map[string]any{"model": "espeak", "turns": []any{mturn}}, 400, "validation_failed", "model", -1},
		{"no model anywhere", map[string]any{"turns": []any{turn}}, 400, "validation_failed", "turns", -1},
		{"gap too long", map[string]any{"model": "espeak", "gapMs": 6000, "turns": []any{turn}}, 400, "validation_failed", "gapMs", -1},
		{"bad volume", map[string]any{"model": "espeak", "volumeDbfs": 3, "turns": []any{turn}}, 400, "validation_failed", "volumeDbfs", -1},
		{"bad mode", map[string]any{"mode": "speech", "model": "espeak", "turns": []any{turn}}, 400, "validation_failed", "mode", -1},
		{"unknown turn field", map[string]any{"model": "espeak", "turns": []any{map[string]any{"voice": "en", "text": "x", "pitch": 3}}}, 400, "validation_failed", "pitch", -1},
		{"blank turn text", map[string]any{"model": "espeak", "turns": []any{turn, map[string]any{"voice": "en", "text": " "}}}, 400, "validation_failed", "turns", 1},
		{"unknown saved voice", map[string]any{"turns": []any{map[string]any{"voiceId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "text": "x"}}}, 404, "voice_not_found", "", 0},
		{"disabled provider in a turn", map[string]any{"turns": []any{mturn, map[string]any{"model": "nope", "voice": "x", "text": "x"}}}, 422, "unknown_provider", "", 1},
		{"timestamps unsupported", map[string]any{"turns": []any{mturn, map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "x"}}}, 503, "timestamps_unavailable", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", tt.body)
			p := r.Problem(t, tt.status, tt.code)
			if tt.field != "" {
				ok := false
				for _, v := range p.Validation {
					ok = ok || strings.Contains(strings.Join(v.Path, "."), tt.field)
				}
				if !ok {
					t.Errorf("validation %+v does not name %q", p.Validation, tt.field)
				}
			}
			if tt.turn >= 0 && (p.TurnIndex == nil || *p.TurnIndex != tt.turn) {
				t.Errorf("turn_index %v, want %d", p.TurnIndex, tt.turn)
			}
		})
	}
}

// moderatedSpeechConfig is harness.SpeechConfig with acme under the built-in
// moderation ruleset.
var moderatedSpeechConfig = strings.Replace(harness.SpeechConfig, "  acme:\n", "  acme:\n    moderation: standard\n", 1) + `
moderation:
  rulesets:
    standard: {mode: fail_closed, checks: [{builtin: {}}]}
`

func TestConversationBlockedTurn(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, moderatedSpeechConfig)
	turns := []any{
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "first turn is fine"},
		map[string]any{"model": "testkit/test", "voice": "beta", "text": "VOXGATE-MODERATION-TEST"},
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "third turn is fine"},
	}
	r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns, "split": true})
	if r.Status != 200 {
		t.Fatalf("split: %d %s", r.Status, r.Body)
	}
	var env harness.ConversationEnvelope
	r.JSON(t, &env)
	if len(env.AudioSegments) != 2 || len(env.FailedTurns) != 1 || env.FailedTurns[0].TurnIndex != 1 ||
		env.FailedTurns[0].Error.Code != "content_moderation_blocked" || env.FailedTurns[0].Error.Status != 422 {
		t.Fatalf("segments %d, failed %+v", len(env.AudioSegments), env.FailedTurns)
	}
	calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
	for _, c := range calls {
		if strings.Contains(c.Text, "MODERATION") {
			t.Fatalf("the blocked turn reached the provider: %+v", c)
		}
	}
	// Without split the blocked turn fails the request with the moderation
	// envelope, naming the turn.
	r = tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns})
	var blocked struct {
		Error struct {
			Code      string                `json:"code"`
			TurnIndex *int                  `json:"turn_index"`
			Reason    struct{ Type string } `json:"reason"`
		} `json:"error"`
	}
	r.JSON(t, &blocked)
	if r.Status != 422 || r.Header.Get("Content-Type") != "application/json" || blocked.Error.Code != "content_moderation_blocked" ||
		blocked.Error.TurnIndex == nil || *blocked.Error.TurnIndex != 1 {
		t.Fatalf("non-split: %d %s", r.Status, r.Body)
	}
}

// TestPronunciationsCannotBypassModeration checks that the text the
// provider would speak after pronunciation rules is moderated too.
func TestPronunciationsCannotBypassModeration(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, moderatedSpeechConfig)
	body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hello friend",
		"pronunciations": map[string]any{"rules": []any{map[string]any{"word": "hello", "replacement": "VOXGATE-MODERATION-TEST"}}}}
	r := tg.Do("POST", "/v1/audio/speech", "acme", body)
	if r.Status != 422 || !strings.Contains(string(r.Body), "content_moderation_blocked") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if n, _ := calllog.Count(filepath.Join(tg.Dir, "calls.jsonl"), "synthesize"); n != 0 {
		t.Fatalf("provider called %d times", n)
	}
}

// TestConversationStream: turns arrive as one audio stream, in order, as
// each is done; the rows account for every turn.
func TestConversationStream(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	status, data, err := harness.ReadStreamPath(t, tg, "/v1/audio/conversation/stream", map[string]any{"turns": threeTurns, "gapMs": 250})
	if status != 200 || err != nil {
		t.Fatalf("stream: %d, %v: %.300s", status, err, data)
	}
	secs, _ := harness.PCMSeconds(t, "audio/wav", data)
	if rate := binary.LittleEndian.Uint32(data[24:28]); rate != 22050 || secs < 3 || secs > 15 {
		t.Errorf("the conversation stream is %.2fs at %d Hz", secs, rate)
	}
	parent := tg.LastLog("acme")
	if parent.Status != 200 || parent.ErrorCode != "" || parent.Path != "/v1/audio/conversation/stream" || parent.CreditsUsed == 0 {
		t.Errorf("conversation row %+v", parent)
	}
	kids := tg.LogsWhere("acme", "parent_request_id="+parent.RequestID)
	if len(kids) != 3 {
		t.Fatalf("%d turn rows, want 3", len(kids))
	}
	credits := 0
	for _, k := range kids {
		credits += k.CreditsUsed
		if k.Status != 200 || k.ErrorCode != "" {
			t.Errorf("turn row %+v", k)
		}
	}
	if credits != parent.CreditsUsed {
		t.Errorf("turn credits %d, conversation %d", credits, parent.CreditsUsed)
	}

	// A first turn that fails is a problem response, before any audio.
	r := tg.Do("POST", "/v1/audio/conversation/stream", "acme", map[string]any{"turns": []any{
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "first", "providerOptions": map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500}}},
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "second"},
	}})
	if p := r.Problem(t, 502, "provider_error"); p.TurnIndex == nil || *p.TurnIndex != 0 {
		t.Errorf("problem %+v does not name turn 0", p)
	}
	// The stream's formats are those it can write turn by turn.
	p := tg.Do("POST", "/v1/audio/conversation/stream", "acme", map[string]any{"turns": threeTurns, "output": map[string]any{"format": "mp3"}}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "output.format")
}

// TestConversationStreamShowsProgress: a conversation that runs out of
// time has delivered the turns it finished; the stream then ends
// incomplete, and every row says which limit fired.
func TestConversationStreamShowsProgress(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(harness.SpeechConfig, "  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n  request_timeout: 1500ms\n", 1))
	turn := func(text string, opts map[string]any) map[string]any {
		return map[string]any{"model": "testkit/test", "voice": "alpha", "text": text, "providerOptions": opts}
	}
	// testkit's provider timeout is 2s, above the request's 1.5s.
	status, data, err := harness.ReadStreamPath(t, tg, "/v1/audio/conversation/stream", map[string]any{"gapMs": 0, "turns": []any{
		turn("one two", nil), turn("three four", nil), turn("never", map[string]any{"hang": true}), turn("five", nil),
	}})
	if status != 200 || len(data) == 0 {
		t.Fatalf("stream: %d with %d bytes", status, len(data))
	}
	if err == nil {
		t.Fatal("a conversation cut off by the request timeout read as complete")
	}
	secs, _ := harness.PCMSeconds(t, "audio/wav", data)
	if secs < 0.5 {
		t.Errorf("only %.2fs of the two finished turns arrived", secs)
	}
	parent := tg.LastLog("acme")
	if parent.Status != 504 || parent.ErrorCode != "request_timeout" {
		t.Errorf("conversation row: %d %s (%s)", parent.Status, parent.ErrorCode, parent.ErrorDetail)
	}
	for _, k := range tg.LogsWhere("acme", "parent_request_id="+parent.RequestID) {
		bad := k.ErrorCode != "" && k.Status < 400 || k.ErrorCode == "" && k.Status != 200
		if bad || k.ErrorCode == "provider_timeout" {
			t.Errorf("turn row status %d with error %q (%s)", k.Status, k.ErrorCode, k.ErrorDetail)
		}
	}

	// The whole-clip endpoint names the same limit, and its rows agree.
	r := tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": []any{
		turn("one two", nil), turn("never", map[string]any{"hang": true}), turn("five", nil),
	}})
	p := r.Problem(t, 504, "request_timeout")
	if p.TurnIndex == nil || *p.TurnIndex != 1 || !strings.Contains(p.Detail, "server.request_timeout") {
		t.Errorf("problem %+v", p)
	}
	parent = tg.LastLog("acme")
	for _, k := range tg.LogsWhere("acme", "parent_request_id="+parent.RequestID) {
		if k.ErrorCode != "" && k.Status < 400 || k.ErrorCode == "" && k.Status != 200 || k.ErrorCode == "provider_timeout" {
			t.Errorf("turn row status %d with error %q (%s)", k.Status, k.ErrorCode, k.ErrorDetail)
		}
	}
}
