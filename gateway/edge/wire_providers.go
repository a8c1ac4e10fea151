package edge

import (
	"time"

	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/resources"
)

// The JSON shapes of the provider routes: the catalog (GET /v1/providers),
// the documented list (GET /v1/audio/providers), a provider's voices, and
// the organization's own provider keys (/v1/api-keys).

// catalogEntry is one provider of GET /v1/providers.
type catalogEntry struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Models []catalogModel `json:"models"`
	Config flagsJSON      `json:"config"`
	Status string         `json:"status"`
}

type catalogModel struct {
	ID            string       `json:"id"`
	Name          string       `json:"name"`
	Capabilities  capabilities `json:"capabilities"`
	OutputFormats []string     `json:"output_formats"`
	// NativeEncodings are the encodings the model produces itself, as
	// format_rate[_kbps]: asked for exactly (output format, sampleRate
	// and bitrate), they pass through the gateway untouched.
	NativeEncodings []string `json:"native_encodings"`
	MaxTextChars    int      `json:"max_text_chars"`
	// NativeSpeedRange is [min, max] of the speed the provider honours
	// itself (0 = unbounded); other speeds are time-stretched by the
	// gateway on whole-clip endpoints. Absent without native speed.
	NativeSpeedRange *[2]float64 `json:"native_speed_range,omitempty"`
	// TimestampsSource is where the with-timestamps endpoints take this
	// model's word timestamps from: native, aligned, stt, or none (503
	// timestamps_unavailable).
	TimestampsSource string `json:"timestamps_source"`
	// AudioTags are the bracketed audio tags the model performs ("*":
	// all); others are removed from the text with a warning.
	AudioTags []string `json:"audio_tags,omitempty"`
}

type capabilities struct {
	Streaming  bool `json:"streaming"`
	Timestamps bool `json:"timestamps"`
	Cloning    bool `json:"cloning"`
	Speed      bool `json:"speed"`
	// Instructions: the model follows delivery instructions
	// (providerOptions.instructions, or the OpenAI dialect's field).
	Instructions bool `json:"instructions"`
	// Stitching: the model conditions each piece of a long text on the
	// provider's ids of the pieces before it, so they render in order.
	Stitching bool `json:"stitching"`
}

// flagsJSON are an organization's flags for a provider, as the catalog
// shows them.
type flagsJSON struct {
	Enabled bool `json:"enabled"`
	BYOK    bool `json:"byok"`
	Managed bool `json:"managed"`
}

func flagsOut(f credentials.Flags) flagsJSON { return flagsJSON(f) }

// providerVoice is one of a provider's own voices.
type providerVoice struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Language string `json:"language"`
	Gender   string `json:"gender"`
}

// documentedProvider is one entry of GET /v1/audio/providers, the
// providers list in the hosted service's documented shape: the
// organization's flags at the top level and models as the prefixed
// strings a synthesis request takes. GET /v1/providers keeps voxgate's
// richer catalog entry.
type documentedProvider struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Enabled bool     `json:"enabled"`
	BYOK    bool     `json:"byok"`
	Managed bool     `json:"managed"`
	Models  []string `json:"models"`
}

// putKeyRequest is the body of PUT /v1/api-keys/{providerId}.
type putKeyRequest struct {
	KeyValue string `json:"keyValue"`
}

// providerKeyJSON is what the API shows of a stored provider key.
type providerKeyJSON struct {
	ProviderID string `json:"providerId"`
	LastFour   string `json:"lastFour"`
	// UpdatedAt is omitted for a key stored before voxgate kept the time.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// providerKeyOut shows a stored provider key: never the key, only its
// last four characters and when it was stored.
func providerKeyOut(k *resources.ProviderKey) providerKeyJSON {
	out := providerKeyJSON{ProviderID: k.ProviderID, LastFour: k.LastFour}
	if !k.UpdatedAt.IsZero() {
		out.UpdatedAt = &k.UpdatedAt
	}
	return out
}
