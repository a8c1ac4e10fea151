package upstream

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Bearer authorizes a request with "Authorization: Bearer key", the
// scheme of OpenAI and of most APIs that copy it.
func Bearer(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }

// ParseOpenAIError reads the error body of OpenAI and OpenAI-compatible
// APIs, {"error": {"message", "type", "param", "code"}}, for API.ParseError.
// The code is error.code (a string, or a number kept as text), else
// error.type; a body of another shape gives empty results.
func ParseOpenAIError(body []byte) (code, message string) {
	var b struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	code = b.Error.Type
	if raw := bytes.TrimSpace(b.Error.Code); len(raw) > 0 && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		if s != "" {
			code = s
		}
	}
	return code, b.Error.Message
}
