package gateway_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// Text the store cannot hold (issue 27): a NUL in a voice once got its
// 422, and then PostgreSQL refused the whole batch of log rows it was in,
// other organizations' rows with it; a voice or dictionary with a NUL
// answered 500 on PostgreSQL and 201 on bbolt. These tests run every case
// on both drivers: the answer must be the same, a 400 naming the field,
// and every organization's rows must land.

// unstorableConfig is eSpeak and OpenAI (a fake) for two organizations.
func unstorableConfig(t *testing.T, driver string) (string, *openai.Server) {
	t.Helper()
	oai := openai.New(t, fakeupstream.Options{Keys: []string{openai.Key}})
	storage := "  path: %DIR%/voxgate.db\n"
	if driver == "postgres" {
		if testing.Short() {
			t.Skip("starts PostgreSQL")
		}
		storage = "  driver: postgres\n  dsn: " + pgtest.StartT(t).NewDatabaseT(t) + "\n" + storage
	}
	return `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
` + storage + `  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    api_key: ` + openai.Key + `
    managed: true
orgs:
  acme:
    providers: {espeak: {enabled: true}, openai: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}, openai: {enabled: true}}
`, oai
}

func TestUnstorableTextIsRefusedAtTheEdge(t *testing.T) {
	for _, driver := range []string{"bolt", "postgres"} {
		t.Run(driver, func(t *testing.T) { testUnstorableText(t, driver) })
	}
}

func testUnstorableText(t *testing.T, driver string) {
	cfg, oai := unstorableConfig(t, driver)
	tg := startGateway(t, cfg)
	const speak = "/v1/audio/speech"

	// Records the cases below change or name.
	r := tg.do("POST", "/v1/voices", "acme", `{"title":"Narrator","provider":"espeak","model":"espeak-ng","voice_id":"en"}`)
	if r.status != 201 {
		t.Fatalf("create a voice: %d %s", r.status, r.body)
	}
	voice := r.voice(t).ID
	r = tg.do("POST", "/v1/pronunciation-dictionaries", "acme", `{"name":"Brand terms"}`)
	if r.status != 201 {
		t.Fatalf("create a dictionary: %d %s", r.status, r.body)
	}
	var dict struct{ ID string }
	r.json(t, &dict)

	// Each case sends a NUL (or a control character in a name) where a
	// client can, and must get 400 validation_failed naming the field.
	// rows says whether the route records a request-log row.
	cases := []struct {
		name, method, path, body string
		want                     []string
		rows                     bool
	}{
		{"voice", "POST", speak, `{"model":"espeak/espeak-ng","voice":"en\u0000x","text":"hello"}`, []string{"voice"}, true},
		{"model id", "POST", speak, `{"model":"espeak/espeak-ng\u0000","voice":"en","text":"hello"}`, []string{"model"}, true},
		{"providerOptions value", "POST", speak, `{"model":"espeak/espeak-ng","voice":"en","text":"hello","providerOptions":{"rate":"\u0000"}}`, []string{"providerOptions", "rate"}, true},
		{"providerOptions key", "POST", speak, `{"model":"espeak/espeak-ng","voice":"en","text":"hello","providerOptions":{"ra\u0000te":1}}`, []string{"providerOptions", "ra\x00te"}, true},
		{"providerOptions key with a newline", "POST", speak, `{"model":"espeak/espeak-ng","voice":"en","text":"hello","providerOptions":{"rate\n":1}}`, []string{"providerOptions", "rate\n"}, true},
		{"text", "POST", speak, `{"model":"espeak/espeak-ng","voice":"en","text":"hel\u0000lo"}`, []string{"text"}, true},
		{"saved voice id", "POST", speak, `{"voiceId":"` + voice + `\u0000","text":"hello"}`, []string{"voiceId"}, true},
		{"moderation ruleset id", "POST", speak, `{"model":"espeak/espeak-ng","voice":"en","text":"hello","moderation_ruleset_id":"std\u0000"}`, []string{"moderation_ruleset_id"}, true},
		{"stream", "POST", speak + "/stream", `{"model":"espeak/espeak-ng","voice":"en\u0000","text":"hello"}`, []string{"voice"}, true},
		{"conversation turn", "POST", "/v1/audio/conversation", `{"turns":[{"model":"espeak/espeak-ng","voice":"en","text":"hi"},{"model":"espeak/espeak-ng","voice":"en\u0000","text":"there"}]}`, []string{"turns", "1", "voice"}, true},
		{"voice title", "POST", "/v1/voices", `{"title":"Narr\u0000ator","provider":"espeak","model":"espeak-ng","voice_id":"en"}`, []string{"title"}, false},
		{"voice tag", "POST", "/v1/voices", `{"title":"Narrator","provider":"espeak","model":"espeak-ng","voice_id":"en","tags":["calm","w\u0000arm"]}`, []string{"tags", "1"}, false},
		{"voice gender", "POST", "/v1/voices", `{"title":"Narrator","provider":"espeak","model":"espeak-ng","voice_id":"en","gender":"\u0000"}`, []string{"gender"}, false},
		{"voice provider_options", "POST", "/v1/voices", `{"title":"Narrator","provider":"espeak","model":"espeak-ng","voice_id":"en","provider_options":{"a":{"b":["ok","\u0000"]}}}`, []string{"provider_options", "a", "b", "1"}, false},
		{"voice update", "PUT", "/v1/voices/" + voice, `{"description":"calm\u0000"}`, []string{"description"}, false},
		{"dictionary name", "POST", "/v1/pronunciation-dictionaries", `{"name":"Br\u0000and"}`, []string{"name"}, false},
		{"rule word", "POST", "/v1/pronunciation-dictionaries/" + dict.ID + "/rules", `{"word":"a\u0000","replacement":"b"}`, []string{"word"}, false},
		{"rule replacement", "POST", "/v1/pronunciation-dictionaries/" + dict.ID + "/rules", `{"word":"a","replacement":"\u0000"}`, []string{"replacement"}, false},
		{"provider key", "PUT", "/v1/api-keys/openai", `{"keyValue":"sk-\u0000"}`, []string{"keyValue"}, false},
		{"path parameter", "GET", "/v1/voices/" + url.PathEscape("v\x00"), "", []string{"id"}, false},
		{"path parameter of invalid UTF-8", "DELETE", "/v1/pronunciation-dictionaries/%FF", "", []string{"id"}, false},
		{"query parameter", "GET", "/v1/logs?provider=" + url.QueryEscape("espeak\x00"), "", []string{"provider"}, false},
	}
	refused := 3 // the OpenAI dialect's two and the ElevenLabs body's below (its path case is refused before it is routed)
	for _, c := range cases {
		if c.rows {
			refused++
		}
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			p := tg.do(c.method, c.path, "acme", body).problem(t, 400, "validation_failed")
			if len(p.Validation) != 1 || !slices.Equal(p.Validation[0].Path, c.want) {
				t.Errorf("validation = %+v, want one entry naming %q", p.Validation, c.want)
			}
			if strings.ContainsRune(p.Detail, 0) {
				t.Errorf("the detail quotes the NUL: %q", p.Detail)
			}
		})
	}

	// The dialects answer in their own error shapes, naming their fields.
	tg.do("POST", speak, "acme", `{"model":"tts-1","input":"hi","voice":"al\u0000loy"}`).openAIError(t, 400, "validation_failed", "voice")
	tg.do("POST", speak, "acme", `{"model":"tts-1","input":"hi","voice":{"id":"\u0000"}}`).openAIError(t, 400, "validation_failed", "voice")
	xi := func(path, body string) *response {
		return tg.do("POST", path, "", body, "xi-api-key", tg.keys["acme"])
	}
	if e := xi("/elevenlabs/v1/text-to-speech/"+url.PathEscape("en\x00x"), `{"text":"hi"}`).elevenLabsError(t, 400, "validation_failed"); e.Detail.Param != "voice_id" {
		t.Errorf("ElevenLabs path voice: param %q, want voice_id", e.Detail.Param)
	}
	if e := xi("/elevenlabs/v1/text-to-speech/en", `{"text":"hi","model_id":"espeak/espeak-ng\u0000"}`).elevenLabsError(t, 400, "validation_failed"); e.Detail.Param != "model_id" {
		t.Errorf("ElevenLabs body model_id: param %q, want model_id", e.Detail.Param)
	}

	// Nothing was created or changed by the refused writes.
	var voices struct{ Data []apiVoice }
	tg.do("GET", "/v1/voices", "acme", nil).json(t, &voices)
	if len(voices.Data) != 1 || voices.Data[0].Description != "" {
		t.Errorf("voices after the refused writes: %+v", voices.Data)
	}

	// A provider's error message may carry a NUL no client sent: the row
	// that quotes it is written sanitized, and the rows batched with it,
	// of both organizations, all land.
	oai.FailNext(1, fakeupstream.Fault{Status: 400, Code: "invalid_voice", Message: "no voice named al\x00loy"})
	upstream := tg.do("POST", speak, "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "hello"})
	if upstream.status/100 != 4 && upstream.status/100 != 5 {
		t.Fatalf("the faulted upstream call answered %d", upstream.status)
	}
	for i := range 5 {
		for _, org := range []string{"acme", "globex"} {
			if r := tg.do("POST", speak, org, map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": fmt.Sprintf("row %d", i)}); r.status != 200 {
				t.Fatalf("%s: %d %s", org, r.status, r.body)
			}
		}
	}
	acme, globex := tg.logsWhere("acme", ""), tg.logsWhere("globex", "")
	if want := refused + 1 + 5; len(acme) != want || len(globex) != 5 {
		t.Fatalf("rows: acme %d (want %d), globex %d (want 5)", len(acme), want, len(globex))
	}
	sanitized := 0
	for _, row := range acme {
		switch {
		case row.Sanitized:
			sanitized++
			if row.Provider != "openai" || !strings.Contains(row.ErrorDetail, "\ufffd") {
				t.Errorf("the sanitized row: %+v", row)
			}
		case row.Status == 400 && row.ErrorCode != "validation_failed":
			t.Errorf("a refused request's row: %+v", row)
		}
	}
	if sanitized != 1 {
		t.Errorf("%d sanitized rows, want the one quoting the provider's NUL", sanitized)
	}
	if got := tg.metricValue("voxgate_log_rows_sanitized_total"); got != 1 {
		t.Errorf("voxgate_log_rows_sanitized_total = %v, want 1", got)
	}
	if got := tg.metricValue("voxgate_log_rows_dropped_total"); got != 0 {
		t.Errorf("voxgate_log_rows_dropped_total = %v, want 0", got)
	}
}
