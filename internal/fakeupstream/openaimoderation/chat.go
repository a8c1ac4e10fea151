package openaimoderation

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// The chat completion endpoint, as the custom moderation rules use it.
//
// It follows OpenAI's published Chat Completions reference for the part a
// JSON-answering classifier uses: Bearer auth, a body of model, messages
// ({role, content} with roles system, developer, user, assistant),
// response_format ({type: text | json_object | json_schema, json_schema:
// {name, strict, schema}}), max_completion_tokens, temperature, seed,
// store and user (any other field is an error, as a typo would be), and an
// answer of {id, object: "chat.completion", created, model, choices:
// [{index, message: {role: "assistant", content, refusal}, logprobs,
// finish_reason}], usage: {prompt_tokens, completion_tokens,
// total_tokens}}. Errors are OpenAI's {"error": {...}} bodies.
//
// What the "model" answers is up to the test. The fake reads the last user
// message as the plugin writes it, a JSON object {"rules": [{"name",
// "rule"}], "text"}, and answers {"violated_rule": name or null,
// "confidence": n} for the first rule (in the order sent) that Violate
// registered with a phrase the text contains. SetChatContent replaces the
// answer's content with anything (malformed output, for error tests).

// ChatPath is the URL path of the chat completion endpoint.
const ChatPath = "/v1/chat/completions"

// ChatModels are the chat models the fake knows.
func ChatModels() []string {
	return []string{"gpt-5.4-nano", "gpt-5.4-mini", "gpt-4o-mini", "gpt-4.1-nano"}
}

type violation struct {
	rule, phrase string
	confidence   float64
}

// Violate makes the model find that a text containing phrase
// (case-insensitive) breaks the rule named rule, with confidence.
func (s *Server) Violate(rule, phrase string, confidence float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, violation{rule: rule, phrase: strings.ToLower(phrase), confidence: confidence})
}

// SetChatContent makes every chat answer's message content c (nil: the
// model's verdict again).
func (s *Server) SetChatContent(c *string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatContent = c
}

// ChatRequest is the documented request body, the fields the fake takes.
type ChatRequest struct {
	Model               *string         `json:"model"`
	Messages            []ChatMessage   `json:"messages"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	Seed                *int            `json:"seed,omitempty"`
	Store               *bool           `json:"store,omitempty"`
	User                *string         `json:"user,omitempty"`
}

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ResponseFormat is the requested answer format.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
}

// ChatResponse is the documented answer; tests may decode into it.
type ChatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []ChatChoice `json:"choices"`
	Usage             ChatUsage    `json:"usage"`
}

// ChatChoice is one answer.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ChatAnswer      `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ChatAnswer is the assistant's message.
type ChatAnswer struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
}

// ChatUsage counts tokens.
type ChatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// RulesInput is the user message the plugin sends: the rules and the text.
type RulesInput struct {
	Rules []struct {
		Name string `json:"name"`
		Rule string `json:"rule"`
	} `json:"rules"`
	Text string `json:"text"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		openai.WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "",
			fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if !openai.Authorized(w, r, s.Keys(Key)) {
		return
	}
	if fault != nil {
		openai.WriteFault(w, fault)
		return
	}
	var body ChatRequest
	if err := fakeupstream.DecodeStrict(req.Body, &body); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", field, "unknown_parameter", fmt.Sprintf("Unrecognized request argument supplied: %s", field))
			return
		}
		openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request.")
		return
	}
	switch {
	case body.Model == nil:
		openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "model", "missing_required_parameter", "Missing required parameter: 'model'.")
		return
	case !slices.Contains(ChatModels(), *body.Model):
		openai.WriteError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", *body.Model))
		return
	case len(body.Messages) == 0:
		openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
		return
	}
	for i, m := range body.Messages {
		if !slices.Contains([]string{"system", "developer", "user", "assistant"}, m.Role) {
			openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages[%d].role", i), "invalid_value",
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'developer', 'user' and 'assistant'.", m.Role))
			return
		}
	}
	if f := body.ResponseFormat; f != nil && !slices.Contains([]string{"text", "json_object", "json_schema"}, f.Type) {
		openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "response_format.type", "invalid_value",
			fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", f.Type))
		return
	}
	content := s.verdict(body.Messages)
	s.mu.Lock()
	if s.chatContent != nil {
		content = *s.chatContent
	}
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, ChatResponse{
		ID: fmt.Sprintf("chatcmpl-fake%d", s.reqID.Add(1)), Object: "chat.completion", Created: 1767225600,
		Model: *body.Model + "-2026-03-17", SystemFingerprint: "fp_fake",
		Choices: []ChatChoice{{Index: 0, Message: ChatAnswer{Role: "assistant", Content: &content}, Logprobs: json.RawMessage("null"), FinishReason: "stop"}},
		Usage:   ChatUsage{PromptTokens: 100, CompletionTokens: 12, TotalTokens: 112},
	})
}

// verdict is the model's answer to the last user message.
func (s *Server) verdict(msgs []ChatMessage) string {
	var in RulesInput
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			_ = json.Unmarshal([]byte(msgs[i].Content), &in)
			break
		}
	}
	text := strings.ToLower(in.Text)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range in.Rules {
		for _, v := range s.violations {
			if v.rule == r.Name && strings.Contains(text, v.phrase) {
				return fmt.Sprintf(`{"violated_rule":%q,"confidence":%g}`, r.Name, v.confidence)
			}
		}
	}
	return `{"violated_rule":null,"confidence":0.97}`
}
