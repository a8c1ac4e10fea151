package edge

import (
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/sdk"
)

// catalogEntry is one provider of GET /v1/providers.
type catalogEntry struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Models []catalogModel    `json:"models"`
	Config credentials.Flags `json:"config"`
	Status string            `json:"status"`
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
}

// outputFormats are the values of output.format m answers: every format
// the gateway encodes, and those m produces itself that the gateway
// cannot encode (AAC), which pass through.
func outputFormats(m *sdk.Model) []string {
	out := audio.OutputFormats()
	for _, f := range m.OutputFormats {
		if _, passOnly := audio.Unavailable(f); passOnly && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// nativeEncodings names the encodings m produces itself.
func nativeEncodings(m *sdk.Model) []string {
	es := m.NativeEncodings()
	out := make([]string, 0, len(es))
	for _, e := range es {
		if sdk.KnownFormat(e.Format) {
			out = append(out, e.String())
		}
	}
	return out
}

func (s *Server) listProviders(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	out := struct {
		Data []catalogEntry `json:"data"`
	}{Data: []catalogEntry{}}
	for _, p := range s.catalog.Providers() {
		e := catalogEntry{ID: p.ID, Name: p.Name, Config: s.creds.Flags(c.p.OrgID, p.ID), Status: "available", Models: []catalogModel{}}
		if !p.Healthy() {
			e.Status = "unavailable"
		}
		for _, m := range p.Desc.Models {
			limit := m.MaxTextChars
			if limit <= 0 {
				limit = s.opts.MaxTextChars
			}
			cm := catalogModel{
				ID: m.ID, Name: m.Name, OutputFormats: outputFormats(&m), NativeEncodings: nativeEncodings(&m), MaxTextChars: limit, AudioTags: m.AudioTags,
				TimestampsSource: s.speech.TimestampsSource(p, &m),
				Capabilities:     capabilities{Streaming: m.Capabilities.Streaming, Timestamps: m.Capabilities.Timestamps, Cloning: m.Capabilities.Cloning, Speed: m.Capabilities.Speed, Instructions: m.Capabilities.Instructions},
			}
			if m.Capabilities.Speed {
				cm.NativeSpeedRange = &[2]float64{m.MinSpeed, m.MaxSpeed}
			}
			e.Models = append(e.Models, cm)
		}
		out.Data = append(out.Data, e)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

// providerVoice is one of a provider's own voices.
type providerVoice struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Language string `json:"language"`
	Gender   string `json:"gender"`
}

func (s *Server) providerVoices(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "model")
	if err != nil {
		return err
	}
	voices, err := s.res.ProviderVoices(c.ctx, c.p.OrgID, pathID(ctx), q["model"])
	if err != nil {
		return err
	}
	out := struct {
		Data []providerVoice `json:"data"`
	}{Data: make([]providerVoice, 0, len(voices))}
	for _, v := range voices {
		out.Data = append(out.Data, providerVoice{ID: v.ID, Name: v.Name, Language: v.Language, Gender: v.Gender})
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}
