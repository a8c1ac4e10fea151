package fakeupstream

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A small document in the shape the providers publish theirs.
const testDocument = `
openapi: 3.1.0
info: {title: Test, version: "1"}
servers: [{url: "https://api.example.com/v1"}]
paths:
  /speak/{voice}:
    post:
      parameters:
        - {name: voice, in: path, required: true, schema: {type: string}}
        - {name: format, in: query, schema: {type: string, enum: [mp3, pcm]}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [text]
              properties:
                text: {type: string}
                speed: {type: number, minimum: 0.5, maximum: 2}
                labels: {type: object, additionalProperties: {type: string}}
      responses:
        "200":
          description: audio
          content:
            audio/mpeg: {schema: {type: string, format: binary}}
        "422":
          description: invalid
          content:
            application/json:
              schema:
                type: object
                required: [detail]
                properties: {detail: {type: string}}
  /voices:
    get:
      responses:
        "200":
          description: voices
          content:
            application/json:
              schema:
                type: object
                required: [voices]
                properties:
                  voices: {type: array, items: {type: object, required: [id], properties: {id: {type: string}}}}
`

// judgeTB is a testing.TB whose Errorf and Cleanup are recorded, so that
// a test can see what Judge makes a test fail with.
type judgeTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (j *judgeTB) Errorf(format string, args ...any) {
	j.errors = append(j.errors, fmt.Sprintf(format, args...))
}
func (j *judgeTB) Cleanup(f func()) { j.cleanups = append(j.cleanups, f) }

func (j *judgeTB) end() {
	for i := len(j.cleanups) - 1; i >= 0; i-- {
		j.cleanups[i]()
	}
}

func TestJudge(t *testing.T) {
	doc, err := LoadDocument("Test", []byte(testDocument))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(doc.Operations(), ", "); got != "GET /voices, POST /speak/{voice}" {
		t.Errorf("operations %s", got)
	}
	// answer is what the handler answers, per test.
	var answer func(w http.ResponseWriter)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) })
	audio := func(ct string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write([]byte{1, 2, 3})
		}
	}
	jsonAnswer := func(status int, body string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	tests := []struct {
		name, method, path, body string
		answer                   func(http.ResponseWriter)
		violations               []string // a part of each violation, in order
	}{
		{"valid", "POST", "/v1/speak/amy?format=mp3", `{"text":"hi","speed":1.5,"labels":{"any":"key"}}`, audio("audio/mpeg"), nil},
		{"an audio answer of another codec", "POST", "/v1/speak/amy?format=pcm", `{"text":"hi"}`, audio("audio/pcm"), nil},
		{"JSON where audio is documented", "POST", "/v1/speak/amy", `{"text":"hi"}`, jsonAnswer(200, `{}`), []string{"answer 200", "content type 'application/json'"}},
		{"out of range", "POST", "/v1/speak/amy", `{"text":"hi","speed":3}`, jsonAnswer(422, `{"detail":"speed"}`), []string{"request", "speed"}},
		{"undocumented field", "POST", "/v1/speak/amy", `{"text":"hi","pitch":1}`, jsonAnswer(422, `{"detail":"pitch"}`), []string{"'pitch'"}},
		{"undocumented query parameter", "POST", "/v1/speak/amy?rate=8000", `{"text":"hi"}`, audio("audio/mpeg"), []string{"rate"}},
		{"a value outside the enum", "POST", "/v1/speak/amy?format=ogg", `{"text":"hi"}`, jsonAnswer(422, `{"detail":"format"}`), []string{"format"}},
		{"an error answer off the document", "POST", "/v1/speak/amy", `{"text":"hi","speed":9}`, jsonAnswer(422, `{"message":"no"}`), []string{"request", "answer 422"}},
		{"an undocumented status is not judged", "POST", "/v1/speak/amy", `{"text":"hi"}`, jsonAnswer(401, `{"whatever":1}`), nil},
		{"a JSON answer off its schema", "GET", "/v1/voices", "", jsonAnswer(200, `{"voices":[{"name":"x"}]}`), []string{"answer 200", "id"}},
		{"an undocumented answer field", "GET", "/v1/voices", "", jsonAnswer(200, `{"voices":[{"id":"a","age":3}]}`), []string{"'age'"}},
		{"no such operation", "DELETE", "/v1/voices", "", jsonAnswer(405, `{}`), []string{"no such operation"}},
		{"no answer at all", "GET", "/v1/voices", "", func(http.ResponseWriter) {}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &judgeTB{TB: t}
			c := NewControl(Options{})
			srv := httptest.NewServer(c.Judge(tb, doc, handler))
			defer srv.Close()
			answer = tt.answer
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			srv.Close()
			tb.end()
			all := strings.Join(tb.errors, "\n")
			if len(tt.violations) == 0 && len(tb.errors) > 0 {
				t.Errorf("judged a violation:\n%s", all)
			}
			if len(tt.violations) > 0 && len(tb.errors) == 0 {
				t.Errorf("no violation; want one with %q", tt.violations)
			}
			for _, part := range tt.violations {
				if !strings.Contains(all, part) {
					t.Errorf("the violations do not name %q:\n%s", part, all)
				}
			}
		})
	}
}

// TestJudgeTakenViolations: what a test takes does not fail it, and a
// benchmark or a fake without a test is not judged.
func TestJudgeTakenViolations(t *testing.T) {
	doc, err := LoadDocument("Test", []byte(testDocument))
	if err != nil {
		t.Fatal(err)
	}
	tb := &judgeTB{TB: t}
	c := NewControl(Options{})
	h := c.Judge(tb, doc, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv := httptest.NewServer(h)
	resp, err := http.Post(srv.URL+"/v1/speak/amy", "application/json", strings.NewReader(`{"speed":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close()
	if v := c.TakeViolations(); len(v) != 1 || !strings.Contains(v[0], "text") {
		t.Errorf("violations %q", v)
	}
	tb.end()
	if len(tb.errors) > 0 {
		t.Errorf("a taken violation failed the test: %q", tb.errors)
	}
	plain := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := c.Judge(nil, doc, plain); fmt.Sprintf("%p", got) != fmt.Sprintf("%p", plain) {
		t.Error("a fake outside a test is judged")
	}
	if got := c.Judge(&testing.B{}, doc, plain); fmt.Sprintf("%p", got) != fmt.Sprintf("%p", plain) {
		t.Error("a benchmark's fake is judged")
	}
}
