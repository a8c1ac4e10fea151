package edge

import (
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

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
	out := envelope[[]catalogEntry]{Data: []catalogEntry{}}
	for _, p := range c.live.Catalog.Providers() {
		e := catalogEntry{ID: p.ID, Name: p.Name, Config: flagsOut(c.live.Credentials.Flags(c.p.OrgID, p.ID)), Status: "available", Models: []catalogModel{}}
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
				TimestampsSource: c.live.Speech.TimestampsSource(p, &m),
				Capabilities:     capabilities{Streaming: m.Capabilities.Streaming, Timestamps: m.Capabilities.Timestamps, Cloning: m.Capabilities.Cloning, Speed: m.Capabilities.Speed, Instructions: m.Capabilities.Instructions, Stitching: m.Capabilities.Stitching},
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

func (s *Server) providerVoices(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "model")
	if err != nil {
		return err
	}
	voices, err := c.live.Resources.ProviderVoices(c.ctx, c.p.OrgID, pathID(ctx), q["model"])
	if err != nil {
		return err
	}
	out := envelope[[]providerVoice]{Data: make([]providerVoice, 0, len(voices))}
	for _, v := range voices {
		out.Data = append(out.Data, providerVoice{ID: v.ID, Name: v.Name, Language: v.Language, Gender: v.Gender})
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}
