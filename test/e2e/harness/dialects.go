package harness

import (
	"testing"
)

// OpenAIErrorBody is OpenAI's error envelope.
type OpenAIErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// OpenAIError asserts r is the OpenAI dialect's error (status, its
// {error: {code, param}} body) and returns the body.
func (r *Response) OpenAIError(t testing.TB, status int, code, param string) OpenAIErrorBody {
	t.Helper()
	if r.Status != status || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d (%s), want %d; %s", r.Status, r.Header.Get("Content-Type"), status, r.Body)
	}
	var e OpenAIErrorBody
	r.JSON(t, &e)
	if e.Error.Code != code || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("error %s, want code %s", r.Body, code)
	}
	if param != "" && (e.Error.Param == nil || *e.Error.Param != param) {
		t.Fatalf("error %s, want param %s", r.Body, param)
	}
	return e
}

// ElevenLabsErrorBody is the ElevenLabs dialect's error: {detail: {...}}.
type ElevenLabsErrorBody struct {
	Detail struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Param   string `json:"param"`
	} `json:"detail"`
}

// ElevenLabsError asserts r is the ElevenLabs dialect's error with
// status and code and returns the body.
func (r *Response) ElevenLabsError(t testing.TB, status int, code string) ElevenLabsErrorBody {
	t.Helper()
	if r.Status != status || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d (%s), want %d; %s", r.Status, r.Header.Get("Content-Type"), status, r.Body)
	}
	var e ElevenLabsErrorBody
	r.JSON(t, &e)
	if e.Detail.Status != code || e.Detail.Message == "" {
		t.Fatalf("error %s, want status %s", r.Body, code)
	}
	return e
}
