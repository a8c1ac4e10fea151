package upstream

import "testing"

func TestParseOpenAIError(t *testing.T) {
	tests := []struct {
		name, body, code, message string
	}{
		{"code", `{"error":{"message":"m","type":"invalid_request_error","code":"model_not_found"}}`, "model_not_found", "m"},
		{"null code: the type", `{"error":{"message":"m","type":"server_error","code":null}}`, "server_error", "m"},
		{"numeric code", `{"error":{"message":"m","type":"t","code":429}}`, "429", "m"},
		{"empty code: the type", `{"error":{"message":"m","type":"t","code":""}}`, "t", "m"},
		{"not JSON", `<html>bad gateway</html>`, "", ""},
		{"another shape", `{"error":"nope"}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := ParseOpenAIError([]byte(tt.body))
			if code != tt.code || msg != tt.message {
				t.Errorf("ParseOpenAIError = %q, %q; want %q, %q", code, msg, tt.code, tt.message)
			}
		})
	}
}
