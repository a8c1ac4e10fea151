package config

import "strings"

// Aliases map the names that code written for another API uses onto this
// gateway's models and voices, so that code moves provider unchanged.
// Organizations may add their own and override these (Org.Aliases).
type Aliases struct {
	// Models maps a model name ("tts-1") to a "provider/model" or
	// "provider" reference ("openai/tts-1", "espeak").
	Models map[string]string `yaml:"models"`
	// Voices maps a voice name ("alloy") to a provider voice or a saved
	// voice.
	Voices map[string]*VoiceAlias `yaml:"voices"`
}

// VoiceAlias is what a voice name stands for: a provider voice (Voice,
// with Model, or the request's model when Model is empty) or a saved
// voice of the organization (SavedVoice), never both.
type VoiceAlias struct {
	// Model is a "provider/model" or "provider" reference, or a model
	// alias; empty keeps the request's model.
	Model string `yaml:"model"`
	// Voice is the provider's voice id.
	Voice string `yaml:"voice"`
	// SavedVoice is the uuid of a saved voice (per-organization aliases
	// only: saved voices belong to one organization).
	SavedVoice string `yaml:"saved_voice"`
}

// validateAliases checks the top-level aliases section (validateOrgs
// checks each organization's own).
func (c *Config) validateAliases(bad report) {
	c.checkAliases("aliases", &c.Aliases, false, bad)
}

// checkAliases checks an aliases block at key: model references are
// "provider[/model]" of a configured provider (or another model alias),
// and each voice alias names either a provider voice or, in an
// organization's block only, a saved voice.
func (c *Config) checkAliases(key string, a *Aliases, perOrg bool, bad report) {
	checkModel := func(k, ref string) {
		target := ref
		if t, ok := a.Models[ref]; ok {
			target = t
		} else if t, ok := c.Aliases.Models[ref]; ok {
			target = t
		}
		pid, _, _ := strings.Cut(target, "/")
		if c.Providers[pid] == nil {
			bad(k, "%q names no provider under providers:", ref)
		}
	}
	for _, name := range sortedKeys(a.Models) {
		k := key + ".models." + name
		if name == "" || strings.TrimSpace(name) != name {
			bad(k, "alias names must not be empty or padded")
		}
		if a.Models[name] == "" {
			bad(k, "is empty: give provider/model")
			continue
		}
		pid, _, _ := strings.Cut(a.Models[name], "/")
		if c.Providers[pid] == nil {
			bad(k, "%q names no provider under providers:", a.Models[name])
		}
	}
	for _, name := range sortedKeys(a.Voices) {
		k := key + ".voices." + name
		v := a.Voices[name]
		switch {
		case v == nil:
			bad(k, "is empty: give voice (with model) or saved_voice")
		case v.SavedVoice != "" && (v.Voice != "" || v.Model != ""):
			bad(k, "give either saved_voice or voice and model, not both")
		case v.SavedVoice != "" && !perOrg:
			bad(k+".saved_voice", "saved voices belong to one organization: set this alias under orgs.<id>.aliases")
		case v.SavedVoice != "" && !uuidLike(v.SavedVoice):
			bad(k+".saved_voice", "%q is not a saved voice's uuid", v.SavedVoice)
		case v.SavedVoice == "" && v.Voice == "":
			bad(k, "give voice (with model) or saved_voice")
		case v.Model != "":
			checkModel(k+".model", v.Model)
		}
	}
}

// uuidLike reports whether s has the form of a uuid.
func uuidLike(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
				return false
			}
		}
	}
	return true
}
