package sdk

import (
	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// This file translates between the sdk's Go types and the generated protocol
// messages. Both adapters (host and plugin side) go through it, so a field
// added to one side and forgotten on the other shows up in the round-trip
// test (wire_test.go).

func credentialsToProto(c Credentials) *pluginpb.Credentials {
	if c == (Credentials{}) {
		return nil
	}
	return &pluginpb.Credentials{ApiKey: c.APIKey, Byok: c.BYOK}
}

func credentialsFromProto(c *pluginpb.Credentials) Credentials {
	return Credentials{APIKey: c.GetApiKey(), BYOK: c.GetByok()}
}

func descriptionToProto(d *Description) *pluginpb.Description {
	if d == nil {
		return &pluginpb.Description{}
	}
	out := &pluginpb.Description{
		Id:           d.ID,
		Name:         d.Name,
		DefaultModel: d.DefaultModel,
		Models:       make([]*pluginpb.Model, len(d.Models)),
	}
	for i, m := range d.Models {
		out.Models[i] = &pluginpb.Model{
			Id:   m.ID,
			Name: m.Name,
			Capabilities: &pluginpb.Capabilities{
				Streaming:  m.Capabilities.Streaming,
				Timestamps: m.Capabilities.Timestamps,
				Cloning:    m.Capabilities.Cloning,
				Speed:      m.Capabilities.Speed,
			},
			OutputFormats:    m.OutputFormats,
			SampleRates:      intsToProto(m.SampleRates),
			NativeSampleRate: int32(m.NativeSampleRate),
			MaxTextChars:     int32(m.MaxTextChars),
		}
	}
	return out
}

func descriptionFromProto(d *pluginpb.Description) *Description {
	out := &Description{
		ID:           d.GetId(),
		Name:         d.GetName(),
		DefaultModel: d.GetDefaultModel(),
	}
	if len(d.GetModels()) > 0 {
		out.Models = make([]Model, len(d.GetModels()))
	}
	for i, m := range d.GetModels() {
		c := m.GetCapabilities()
		out.Models[i] = Model{
			ID:   m.GetId(),
			Name: m.GetName(),
			Capabilities: Capabilities{
				Streaming:  c.GetStreaming(),
				Timestamps: c.GetTimestamps(),
				Cloning:    c.GetCloning(),
				Speed:      c.GetSpeed(),
			},
			OutputFormats:    m.GetOutputFormats(),
			SampleRates:      intsFromProto(m.GetSampleRates()),
			NativeSampleRate: int(m.GetNativeSampleRate()),
			MaxTextChars:     int(m.GetMaxTextChars()),
		}
	}
	return out
}

func intsToProto(v []int) []int32 {
	if v == nil {
		return nil
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func intsFromProto(v []int32) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func voicesToProto(vs []Voice) *pluginpb.VoicesResponse {
	out := &pluginpb.VoicesResponse{Voices: make([]*pluginpb.Voice, len(vs))}
	for i, v := range vs {
		out.Voices[i] = &pluginpb.Voice{Id: v.ID, Name: v.Name, Language: v.Language, Gender: v.Gender}
	}
	return out
}

func voicesFromProto(r *pluginpb.VoicesResponse) []Voice {
	if len(r.GetVoices()) == 0 {
		return nil
	}
	out := make([]Voice, len(r.GetVoices()))
	for i, v := range r.GetVoices() {
		out[i] = Voice{ID: v.GetId(), Name: v.GetName(), Language: v.GetLanguage(), Gender: v.GetGender()}
	}
	return out
}

func synthesizeRequestToProto(r *SynthesizeRequest) *pluginpb.SynthesizeRequest {
	return &pluginpb.SynthesizeRequest{
		Model:       r.Model,
		Voice:       r.Voice,
		Text:        r.Text,
		Speed:       r.Speed,
		Format:      r.Format,
		SampleRate:  int32(r.SampleRate),
		Timestamps:  r.Timestamps,
		Options:     r.Options,
		Credentials: credentialsToProto(r.Credentials),
	}
}

func synthesizeRequestFromProto(r *pluginpb.SynthesizeRequest) *SynthesizeRequest {
	return &SynthesizeRequest{
		Model:       r.GetModel(),
		Voice:       r.GetVoice(),
		Text:        r.GetText(),
		Speed:       r.GetSpeed(),
		Format:      r.GetFormat(),
		SampleRate:  int(r.GetSampleRate()),
		Timestamps:  r.GetTimestamps(),
		Options:     r.GetOptions(),
		Credentials: credentialsFromProto(r.GetCredentials()),
	}
}

func synthesizeResponseToProto(r *SynthesizeResponse) *pluginpb.SynthesizeResponse {
	if r == nil {
		return &pluginpb.SynthesizeResponse{}
	}
	out := &pluginpb.SynthesizeResponse{
		Audio:     r.Audio,
		MediaType: r.MediaType,
		Warnings:  r.Warnings,
	}
	if r.Timestamps != nil {
		// One backing array for all entries instead of one allocation each:
		// a long clip carries thousands of words.
		backing := make([]pluginpb.WordTimestamp, len(r.Timestamps))
		out.Timestamps = make([]*pluginpb.WordTimestamp, len(r.Timestamps))
		for i, w := range r.Timestamps {
			backing[i].Text, backing[i].Start, backing[i].End = w.Text, w.Start, w.End
			out.Timestamps[i] = &backing[i]
		}
	}
	return out
}

func synthesizeResponseFromProto(r *pluginpb.SynthesizeResponse) *SynthesizeResponse {
	out := &SynthesizeResponse{
		Audio:     r.GetAudio(),
		MediaType: r.GetMediaType(),
		Warnings:  r.GetWarnings(),
	}
	if ts := r.GetTimestamps(); len(ts) > 0 {
		out.Timestamps = make([]WordTimestamp, len(ts))
		for i, w := range ts {
			out.Timestamps[i] = WordTimestamp{Text: w.GetText(), Start: w.GetStart(), End: w.GetEnd()}
		}
	}
	return out
}

func cloneRequestToProto(r *CloneRequest) *pluginpb.CloneRequest {
	out := &pluginpb.CloneRequest{
		Model:       r.Model,
		Name:        r.Name,
		Description: r.Description,
		Options:     r.Options,
		Credentials: credentialsToProto(r.Credentials),
		Samples:     make([]*pluginpb.Sample, len(r.Samples)),
	}
	for i, s := range r.Samples {
		out.Samples[i] = &pluginpb.Sample{Filename: s.Filename, MediaType: s.MediaType, Data: s.Data}
	}
	return out
}

func cloneRequestFromProto(r *pluginpb.CloneRequest) *CloneRequest {
	out := &CloneRequest{
		Model:       r.GetModel(),
		Name:        r.GetName(),
		Description: r.GetDescription(),
		Options:     r.GetOptions(),
		Credentials: credentialsFromProto(r.GetCredentials()),
	}
	if len(r.GetSamples()) > 0 {
		out.Samples = make([]Sample, len(r.GetSamples()))
	}
	for i, s := range r.GetSamples() {
		out.Samples[i] = Sample{Filename: s.GetFilename(), MediaType: s.GetMediaType(), Data: s.GetData()}
	}
	return out
}

func moderationResultToProto(r *ModerationResult) *pluginpb.ModerationResult {
	if r == nil {
		return &pluginpb.ModerationResult{}
	}
	return &pluginpb.ModerationResult{
		Decision:   r.Decision,
		Category:   r.Category,
		Confidence: r.Confidence,
		Detail:     r.Detail,
	}
}

func moderationResultFromProto(r *pluginpb.ModerationResult) *ModerationResult {
	return &ModerationResult{
		Decision:   r.GetDecision(),
		Category:   r.GetCategory(),
		Confidence: r.GetConfidence(),
		Detail:     r.GetDetail(),
	}
}
