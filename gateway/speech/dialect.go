package speech

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/voxgate/voxgate/gateway/problem"
)

// What the dialects (gateway/edge/dialect) ask of a request beyond voxgate's
// own fields: delivery instructions for the models that follow them, and
// provider options meant for one provider only. Both are dropped with a
// warning when the request resolves elsewhere, so the same client code
// keeps working when an alias moves it to another provider.

// dialectOptions returns the request's providerOptions for j, with
// Instructions merged in when the model follows them, and the warnings
// for what was dropped.
func (r *Request) dialectOptions(j *Job) (json.RawMessage, []string, error) {
	opts := r.ProviderOptions
	var warnings []string
	if r.OptionsFor != "" && r.OptionsFor != j.Provider.ID && hasContent(opts) {
		warnings = append(warnings, fmt.Sprintf("%s settings were ignored: the request went to %s/%s", r.OptionsFor, j.Provider.ID, j.Model.ID))
		opts = nil
	}
	if r.Instructions == nil {
		return opts, warnings, nil
	}
	m := map[string]any{}
	if hasContent(opts) {
		if err := json.Unmarshal(opts, &m); err != nil {
			return nil, nil, problem.Validation(problem.Field("must be an object", "providerOptions"))
		}
	}
	if _, ok := m["instructions"]; ok {
		// Giving them both ways is ambiguous, whatever the model.
		return nil, nil, problem.Validation(problem.Field("give instructions once: here or as providerOptions.instructions", "instructions"))
	}
	if !j.Model.Capabilities.Instructions {
		warnings = append(warnings, fmt.Sprintf("instructions were ignored: model %s/%s does not follow them", j.Provider.ID, j.Model.ID))
		return opts, warnings, nil
	}
	m["instructions"] = *r.Instructions
	b, err := json.Marshal(m)
	return b, warnings, err
}

func hasContent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("{}"))
}
