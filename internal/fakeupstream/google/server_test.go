package google

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

type answer struct {
	status int
	header http.Header
	body   []byte
}

func call(t *testing.T, s *Server, path string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

var authed = map[string]string{"X-Goog-Api-Key": Key, "Content-Type": "application/json"}

const okBody = `{"contents":[{"role":"user","parts":[{"text":"Hello world."}]}],"generationConfig":{"responseModalities":["AUDIO"],"speechConfig":{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}}}`

type envelope struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	} `json:"error"`
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	gen := Path("gemini-2.5-flash-preview-tts", "generateContent")
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	multi := `"multiSpeakerVoiceConfig":{"speakerVoiceConfigs":[{"speaker":"Joe","voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}},{"speaker":"Jane","voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Puck"}}}]}`
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		body    string
		status  int
		code    string
		msgHas  string
	}{
		{"ok", gen, authed, okBody, 200, "", ""},
		{"key as query parameter", gen + "?key=" + Key, map[string]string{"Content-Type": "application/json"}, okBody, 200, "", ""},
		{"snake_case fields", gen, authed, `{"contents":[{"parts":[{"text":"Hi."}]}],"generation_config":{"response_modalities":["audio"],"speech_config":{"voice_config":{"prebuilt_voice_config":{"voice_name":"kore"}},"language_code":"en-US"}}}`, 200, "", ""},
		{"two speakers", gen, authed, with(`"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}`, multi), 200, "", ""},
		{"no key", gen, map[string]string{"Content-Type": "application/json"}, okBody, 403, "PERMISSION_DENIED", "unregistered callers"},
		{"wrong key", gen, map[string]string{"X-Goog-Api-Key": "AIza-wrong", "Content-Type": "application/json"}, okBody, 400, "INVALID_ARGUMENT", "API key not valid"},
		{"unknown field", gen, authed, with(`"responseModalities"`, `"speed":2,"responseModalities"`), 400, "INVALID_ARGUMENT", `Unknown name "speed"`},
		{"text modality", gen, authed, with(`["AUDIO"]`, `["TEXT"]`), 400, "INVALID_ARGUMENT", "response modalities (TEXT)"},
		{"no modality", gen, authed, with(`"responseModalities":["AUDIO"],`, ""), 400, "INVALID_ARGUMENT", "response modalities"},
		{"unknown voice", gen, authed, with("Kore", "Alloy"), 400, "INVALID_ARGUMENT", "Voice Alloy is not supported"},
		{"one speaker of two", gen, authed, with(`"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}`, `"multiSpeakerVoiceConfig":{"speakerVoiceConfigs":[{"speaker":"Joe","voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}]}`), 400, "INVALID_ARGUMENT", "enabled_voices must equal 2"},
		{"both voice kinds", gen, authed, with(`"voiceConfig"`, multi+`,"voiceConfig"`), 400, "INVALID_ARGUMENT", "only one of"},
		{"empty text", gen, authed, with("Hello world.", " "), 400, "INVALID_ARGUMENT", "must not be empty"},
		{"bad language", gen, authed, with(`}}}}`, `}},"languageCode":"english language"}}`), 400, "INVALID_ARGUMENT", "language code"},
		{"text model", Path("gemini-2.5-flash", "generateContent"), authed, okBody, 400, "INVALID_ARGUMENT", "not supported by the model"},
		{"unknown model", Path("gemini-0-tts", "generateContent"), authed, okBody, 404, "NOT_FOUND", "is not found"},
		{"unknown method", Path("gemini-2.5-flash-preview-tts", "predict"), authed, okBody, 404, "NOT_FOUND", "was not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, s, tt.path, tt.headers, tt.body)
			if a.status != tt.status {
				t.Fatalf("%d %s; want %d", a.status, a.body, tt.status)
			}
			if tt.status == 200 {
				return
			}
			var e envelope
			if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code != tt.status || e.Error.Status != tt.code || !strings.Contains(e.Error.Message, tt.msgHas) {
				t.Errorf("%s; want %s with %q", a.body, tt.code, tt.msgHas)
			}
		})
	}
}

// generateAnswer is the part of a GenerateContentResponse the tests read.
type generateAnswer struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				InlineData struct {
					MimeType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		CandidatesTokenCount int `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
}

func (g generateAnswer) pcm(t *testing.T) []byte {
	t.Helper()
	var out []byte
	for _, p := range g.Candidates[0].Content.Parts {
		if p.InlineData.MimeType != MimeType {
			t.Fatalf("mime type %q", p.InlineData.MimeType)
		}
		b, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

func TestGenerateContent(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	a := call(t, s, Path("gemini-2.5-pro-preview-tts", "generateContent"), authed, okBody)
	var g generateAnswer
	if err := json.Unmarshal(a.body, &g); err != nil || a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if g.Candidates[0].FinishReason != "STOP" || g.Candidates[0].Content.Role != "model" || g.UsageMetadata == nil {
		t.Errorf("answer %s", a.body)
	}
	clip, err := sdktest.Decode("audio/pcm;rate=24000", g.pcm(t))
	if want := fakeupstream.Speak("Hello world.", 1).Seconds; err != nil || math.Abs(clip.Seconds()-want) > 0.001 {
		t.Errorf("clip %+v %v, want %.3f s", clip, err, want)
	}
}

// events reads an SSE body into its answers.
func events(t *testing.T, r io.Reader) []generateAnswer {
	t.Helper()
	var out []generateAnswer
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var g generateAnswer
		if err := json.Unmarshal([]byte(data), &g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

func TestStreamGenerateContent(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 3001})
	text := "Streams come in several events."
	body := strings.Replace(okBody, "Hello world.", text, 1)
	a := call(t, s, Path("gemini-2.5-flash-preview-tts", "streamGenerateContent")+"?alt=sse", authed, body)
	if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	evs := events(t, bytes.NewReader(a.body))
	var pcm []byte
	for i, e := range evs {
		chunk := e.pcm(t)
		if len(chunk)%2 != 0 {
			t.Errorf("event %d holds %d bytes", i, len(chunk))
		}
		pcm = append(pcm, chunk...)
		if last := i == len(evs)-1; (e.Candidates[0].FinishReason == "STOP") != last || (e.UsageMetadata != nil) != last {
			t.Errorf("event %d: finish reason %q", i, e.Candidates[0].FinishReason)
		}
	}
	if len(evs) < 3 {
		t.Errorf("%d events; want several", len(evs))
	}
	if clip, err := sdktest.Decode("audio/pcm;rate=24000", pcm); err != nil || math.Abs(clip.Seconds()-fakeupstream.Speak(text, 1).Seconds) > 0.001 {
		t.Errorf("clip %+v %v", clip, err)
	}
	// Without alt=sse the method answers a JSON array of the same answers.
	a = call(t, s, Path("gemini-2.5-flash-preview-tts", "streamGenerateContent"), authed, body)
	var list []generateAnswer
	if err := json.Unmarshal(a.body, &list); err != nil || len(list) != len(evs) {
		t.Errorf("JSON array: %d answers (%v), want %d", len(list), err, len(evs))
	}
}

// TestHeldStream: a held stream sends its first event and waits.
func TestHeldStream(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 2000})
	s.HoldStreams()
	req, _ := http.NewRequest(http.MethodPost, s.URL+Path("gemini-2.5-flash-preview-tts", "streamGenerateContent")+"?alt=sse", strings.NewReader(okBody))
	for k, v := range authed {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(resp.Body).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "data: ") {
			t.Errorf("first line %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no first event while held")
	}
	s.ReleaseStreams()
}

func TestFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	gen := Path("gemini-2.5-flash-preview-tts", "generateContent")
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "7"})
	a := call(t, s, gen, authed, okBody)
	var e envelope
	_ = json.Unmarshal(a.body, &e)
	if a.status != 429 || a.header.Get("Retry-After") != "7" || e.Error.Status != "RESOURCE_EXHAUSTED" || len(e.Error.Details) != 1 || e.Error.Details[0].RetryDelay != "7s" {
		t.Errorf("429: %d %v %s", a.status, a.header, a.body)
	}
	s.FailNext(1, fakeupstream.Fault{Status: 503, Code: "MODEL_OVERLOADED"})
	a = call(t, s, gen, authed, okBody)
	e = envelope{}
	_ = json.Unmarshal(a.body, &e)
	if a.status != 503 || e.Error.Status != "UNAVAILABLE" || e.Error.Details[0].Reason != "MODEL_OVERLOADED" {
		t.Errorf("503: %d %s", a.status, a.body)
	}
	if a := call(t, s, gen, authed, okBody); a.status != 200 || s.Calls() != 3 {
		t.Errorf("after the faults: %d, %d calls", a.status, s.Calls())
	}
}
