package dialects

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// The providers' own API documents, cut to the operations each dialect
// serves (apispec/, whose headers name the upstream files): the judges
// of what the dialects answer.
var (
	//go:embed apispec/elevenlabs.yaml
	elevenLabsDocument []byte
	//go:embed apispec/openai.yaml
	openAIDocument []byte
)

// TestDialectsAnswerAsTheProvidersDocumentsSay: every call the dialects
// serve, made as the provider's document describes it, is a request that
// document accepts, and its answer is one it describes: what an SDK
// generated from the document (ElevenLabs' checks the answers it
// parses) and code written against the provider expect. The
// stream/with-timestamps answer is judged line by line, each line being
// one of the objects the document describes. Only successful answers
// are judged: the dialects' errors are the providers' shapes as their
// SDKs read them (TestOfficialSDKs), with voxgate's statuses and codes.
func TestDialectsAnswerAsTheProvidersDocumentsSay(t *testing.T) {
	t.Parallel()
	el, err := fakeupstream.LoadDocument("ElevenLabs", elevenLabsDocument)
	if err != nil {
		t.Fatal(err)
	}
	oai, err := fakeupstream.LoadDocument("OpenAI", openAIDocument)
	if err != nil {
		t.Fatal(err)
	}
	d := startDialects(t, "")
	saved := d.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Storyteller", "provider": "espeak", "model": "espeak-ng", "voice_id": "en", "gender": "female"}).Voice(t).ID
	key := d.Keys["acme"]
	speak := map[string]any{"text": "Judged by the provider's own document.", "model_id": "eleven_multilingual_v2", "voice_settings": map[string]any{"stability": 0.5}}
	tests := []struct {
		name      string
		doc       *fakeupstream.Document
		prefix    string // where the gateway serves the provider's paths
		method    string
		path      string // as the provider's document writes it, with its query
		body      any
		wantLines bool
	}{
		{"convert", el, "/elevenlabs", "POST", "/v1/text-to-speech/narrator?output_format=pcm_22050", speak, false},
		{"stream", el, "/elevenlabs", "POST", "/v1/text-to-speech/narrator/stream?output_format=mp3_44100_128&optimize_streaming_latency=1", speak, false},
		{"with-timestamps", el, "/elevenlabs", "POST", "/v1/text-to-speech/narrator/with-timestamps?output_format=pcm_16000", speak, false},
		{"stream/with-timestamps", el, "/elevenlabs", "POST", "/v1/text-to-speech/narrator/stream/with-timestamps?output_format=pcm_22050", speak, true},
		{"voices", el, "/elevenlabs", "GET", "/v1/voices?show_legacy=true", nil, false},
		{"voices v2, paged", el, "/elevenlabs", "GET", "/v2/voices?page_size=1&sort=name&sort_direction=asc&include_total_count=true", nil, false},
		{"voices v2, searched", el, "/elevenlabs", "GET", "/v2/voices?search=story&voice_type=personal&gender=female", nil, false},
		{"voices v2, by ids", el, "/elevenlabs", "GET", "/v2/voices?voice_ids=narrator&voice_ids=" + saved, nil, false},
		{"a voice alias", el, "/elevenlabs", "GET", "/v1/voices/narrator", nil, false},
		{"a saved voice", el, "/elevenlabs", "GET", "/v1/voices/" + saved + "?with_settings=true", nil, false},
		{"models", el, "/elevenlabs", "GET", "/v1/models", nil, false},
		{"speech", oai, "", "POST", "/v1/audio/speech", map[string]any{"model": "tts-1", "voice": "alloy", "input": "Judged.", "response_format": "wav", "speed": 1.5}, false},
		{"speech as events", oai, "", "POST", "/v1/audio/speech", map[string]any{"model": "tts-1", "voice": "alloy", "input": "Judged.", "response_format": "pcm", "stream_format": "sse"}, false},
		{"models", oai, "", "GET", "/v1/models", nil, false},
		{"a model", oai, "", "GET", "/v1/models/tts-1", nil, false},
		{"a provider's model, as the SDK escapes it", oai, "", "GET", "/v1/models/espeak%2Fespeak-ng", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != nil {
				body, _ = json.Marshal(tt.body)
			}
			hdr := []string{"xi-api-key", key}
			if tt.doc == oai {
				hdr = []string{"Authorization", "Bearer " + key}
			}
			r := d.Do(tt.method, tt.prefix+tt.path, "", tt.body, hdr...)
			if r.Status != 200 {
				t.Fatalf("%d %.300s", r.Status, r.Body)
			}
			u, err := url.Parse(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			req := &http.Request{Method: tt.method, URL: u, Header: http.Header{hdr[0]: {hdr[1]}}}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			for _, v := range tt.doc.CheckRequest(req, body) {
				t.Errorf("request: %s", v)
			}
			mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			var answers [][]byte
			switch {
			case tt.wantLines:
				lines := bytes.Split(bytes.TrimSuffix(r.Body, []byte("\n")), []byte("\n"))
				if len(lines) < 2 {
					t.Fatalf("%d lines: %.300s", len(lines), r.Body)
				}
				answers = lines
			case strings.HasSuffix(mt, "json"):
				answers = [][]byte{r.Body}
			default:
				answers = [][]byte{nil} // audio or events: judged by media type
			}
			for _, a := range answers {
				for _, v := range tt.doc.CheckResponse(req, r.Status, r.Header, a) {
					t.Errorf("answer: %s", v)
				}
			}
		})
	}
}
