package dialect

import (
	"sort"
	"strings"

	"github.com/google/uuid"
)

// AliasSet is one block of aliases: the top level's, or one
// organization's.
type AliasSet struct {
	// Models maps a name ("tts-1") to a "provider/model" or "provider"
	// reference.
	Models map[string]string
	// Voices maps a name ("alloy") to what it stands for.
	Voices map[string]VoiceAlias
}

// VoiceAlias is what a voice name stands for: a provider voice (Voice,
// with Model or else the request's model) or a saved voice (SavedVoice).
type VoiceAlias struct {
	Model, Voice, SavedVoice string
}

// Aliases resolve the model and voice names of dialect requests. An
// organization's own aliases win over the top level's. It is built once
// at start and only read afterwards.
type Aliases struct {
	global AliasSet
	orgs   map[string]AliasSet
}

// NewAliases returns the aliases of a configuration.
func NewAliases(global AliasSet, orgs map[string]AliasSet) *Aliases {
	return &Aliases{global: global, orgs: orgs}
}

// Model returns what the model name stands for in org.
func (a *Aliases) Model(org, name string) (string, bool) {
	if a == nil {
		return "", false
	}
	if t, ok := a.orgs[org].Models[name]; ok {
		return t, true
	}
	t, ok := a.global.Models[name]
	return t, ok
}

// Voice returns what the voice name stands for in org.
func (a *Aliases) Voice(org, name string) (VoiceAlias, bool) {
	if a == nil {
		return VoiceAlias{}, false
	}
	if v, ok := a.orgs[org].Voices[name]; ok {
		return v, true
	}
	v, ok := a.global.Voices[name]
	return v, ok
}

// ModelNames returns the model alias names visible to org, sorted.
func (a *Aliases) ModelNames(org string) []string {
	if a == nil {
		return nil
	}
	return mergedKeys(a.global.Models, a.orgs[org].Models)
}

// VoiceNames returns the voice alias names visible to org, sorted.
func (a *Aliases) VoiceNames(org string) []string {
	if a == nil {
		return nil
	}
	return mergedKeys(a.global.Voices, a.orgs[org].Voices)
}

func mergedKeys[V any](a, b map[string]V) []string {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Target is what a dialect's model and voice resolve to: a saved voice
// (VoiceID) or a model reference and provider voice (Model, Voice), as
// voxgate's own speech request takes them.
type Target struct {
	VoiceID, Model, Voice string
}

// Resolve turns a dialect request's model and voice into a Target for
// org. The voice is looked up first: an alias names a saved voice, or a
// provider voice and perhaps the model; a uuid is a saved voice; any
// other value is the provider's own voice id. The model is then looked up
// among the model aliases; a name that is neither an alias, a
// "provider/model" reference nor a configured provider (isProvider) is
// taken as a model of the dialect's home provider ("tts-1" is
// "openai/tts-1" in the OpenAI dialect), so that code written for the
// original API reaches the provider it was written for when no alias
// moves it elsewhere. An empty model is the home provider's default.
func (a *Aliases) Resolve(org, model, voice, home string, isProvider func(string) bool) Target {
	if va, ok := a.Voice(org, voice); ok {
		if va.SavedVoice != "" {
			return Target{VoiceID: va.SavedVoice}
		}
		voice = va.Voice
		if va.Model != "" {
			model = va.Model
		}
	} else if _, err := uuid.Parse(voice); err == nil && len(voice) == 36 {
		return Target{VoiceID: voice}
	}
	if t, ok := a.Model(org, model); ok {
		model = t
	}
	switch {
	case model == "":
		model = home
	case !strings.Contains(model, "/") && !isProvider(model):
		model = home + "/" + model
	}
	return Target{Model: model, Voice: voice}
}
