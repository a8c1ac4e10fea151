package bolt

import (
	"encoding/json"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// The on-disk JSON forms of keys, voices and media. They are part of the
// file format (schema version 1): field names never change, and new fields
// are only added with omitempty so older files still read.

type keyRecord struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"org_id"`
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	Hash      []byte    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Scope is written with its Go field names: a key written before
	// scopes existed has none, and decodes to the zero scope.
	Scope store.KeyScope `json:"scope,omitzero"`
	Admin bool           `json:"admin,omitempty"`
}

type voiceRecord struct {
	ID              string         `json:"id"`
	OrgID           string         `json:"org_id"`
	Title           string         `json:"title"`
	Provider        string         `json:"provider"`
	Model           string         `json:"model"`
	VoiceID         string         `json:"voice_id"`
	Tags            []string       `json:"tags"`
	Gender          string         `json:"gender"`
	Description     string         `json:"description"`
	ProviderOptions map[string]any `json:"provider_options"`
	MediaID         string         `json:"media_id,omitempty"`
	// Fallbacks are written with their Go field names; a voice written
	// before fallbacks existed has none.
	Fallbacks []store.VoiceTarget `json:"fallbacks,omitempty"`
	CreatedAt time.Time           `json:"created_at"`
	UpdatedAt time.Time           `json:"updated_at"`
	// Consent is written with its Go field names; a voice written before
	// consent existed has none.
	Consent *store.VoiceConsent `json:"consent,omitempty"`
}

type mediaRecord struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	Filename   string    `json:"filename"`
	MediaType  string    `json:"media_type"`
	Bytes      int64     `json:"bytes"`
	DurationMS int64     `json:"duration_ms"`
	SHA256     string    `json:"sha256"`
	CreatedAt  time.Time `json:"created_at"`
}

// The record types mirror the store types field for field, so a
// conversion is a type conversion and cannot forget a field.

func encodeKey(k *store.APIKey) ([]byte, error) { return json.Marshal(keyRecord(*k)) }

func decodeKey(data []byte) (*store.APIKey, error) {
	var r keyRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	k := store.APIKey(r)
	return &k, nil
}

func encodeVoice(v *store.Voice) ([]byte, error) { return json.Marshal(voiceRecord(*v)) }

// decodeVoice decodes a stored voice and normalizes nil collections to
// empty ones, so the API always renders `[]` and `{}` rather than null.
func decodeVoice(data []byte) (*store.Voice, error) {
	var r voiceRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	v := store.Voice(r)
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if v.ProviderOptions == nil {
		v.ProviderOptions = map[string]any{}
	}
	if v.Fallbacks == nil {
		v.Fallbacks = []store.VoiceTarget{}
	}
	return &v, nil
}

func encodeMedia(m *store.Media) ([]byte, error) { return json.Marshal(mediaRecord(*m)) }

func decodeMedia(data []byte) (*store.Media, error) {
	var r mediaRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	m := store.Media(r)
	return &m, nil
}
