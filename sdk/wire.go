package sdk

import (
	"bytes"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

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
		Plans:        d.Plans,
		Transcribes:  d.Transcribes,
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
				// Only a provider that implements InputStreamer may
				// claim it (Describe on the plugin side clears it).
				InputStreaming: m.Capabilities.InputStreaming,
				Instructions:   m.Capabilities.Instructions,
				Stitching:      m.Capabilities.Stitching,
			},
			OutputFormats:    m.OutputFormats,
			SampleRates:      intsToProto(m.SampleRates),
			NativeSampleRate: int32(m.NativeSampleRate),
			MaxTextChars:     int32(m.MaxTextChars),
			MinSpeed:         m.MinSpeed,
			MaxSpeed:         m.MaxSpeed,
			AudioTags:        m.AudioTags,
			Encodings:        encodingsToProto(m.Encodings),
			StreamEncodings:  encodingsToProto(m.StreamEncodings),
			Phonemes:         phonemesToProto(m.Phonemes),
			Prices:           pricesToProto(m.Prices),
		}
	}
	return out
}

func pricesToProto(ps []Price) []*pluginpb.Price {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*pluginpb.Price, len(ps))
	for i, p := range ps {
		out[i] = &pluginpb.Price{Unit: p.Unit, Amount: p.Amount, Per: p.Per, Currency: p.Currency, Source: p.Source,
			Date: p.Date, Tokenizer: p.Tokenizer, TokensPerSecond: p.TokensPerSecond, PerCharacter: p.PerCharacter}
	}
	return out
}

func pricesFromProto(ps []*pluginpb.Price) []Price {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Price, len(ps))
	for i, p := range ps {
		out[i] = Price{Unit: p.GetUnit(), Amount: p.GetAmount(), Per: p.GetPer(), Currency: p.GetCurrency(), Source: p.GetSource(),
			Date: p.GetDate(), Tokenizer: p.GetTokenizer(), TokensPerSecond: p.GetTokensPerSecond(), PerCharacter: p.GetPerCharacter()}
	}
	return out
}

func encodingsToProto(es []Encoding) []*pluginpb.Encoding {
	if len(es) == 0 {
		return nil
	}
	out := make([]*pluginpb.Encoding, len(es))
	for i, e := range es {
		out[i] = &pluginpb.Encoding{Format: e.Format, SampleRate: int32(e.SampleRate), Bitrate: int32(e.Bitrate)}
	}
	return out
}

func encodingsFromProto(es []*pluginpb.Encoding) []Encoding {
	if len(es) == 0 {
		return nil
	}
	out := make([]Encoding, len(es))
	for i, e := range es {
		out[i] = Encoding{Format: e.GetFormat(), SampleRate: int(e.GetSampleRate()), Bitrate: int(e.GetBitrate())}
	}
	return out
}

func descriptionFromProto(d *pluginpb.Description) *Description {
	out := &Description{
		ID:           d.GetId(),
		Name:         d.GetName(),
		DefaultModel: d.GetDefaultModel(),
		Plans:        d.GetPlans(),
		Transcribes:  d.GetTranscribes(),
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
				Streaming:      c.GetStreaming(),
				Timestamps:     c.GetTimestamps(),
				Cloning:        c.GetCloning(),
				Speed:          c.GetSpeed(),
				InputStreaming: c.GetInputStreaming(),
				Instructions:   c.GetInstructions(),
				Stitching:      c.GetStitching(),
			},
			OutputFormats:    m.GetOutputFormats(),
			SampleRates:      intsFromProto(m.GetSampleRates()),
			NativeSampleRate: int(m.GetNativeSampleRate()),
			MaxTextChars:     int(m.GetMaxTextChars()),
			MinSpeed:         m.GetMinSpeed(),
			MaxSpeed:         m.GetMaxSpeed(),
			AudioTags:        m.GetAudioTags(),
			Encodings:        encodingsFromProto(m.GetEncodings()),
			StreamEncodings:  encodingsFromProto(m.GetStreamEncodings()),
			Phonemes:         phonemesFromProto(m.GetPhonemes()),
			Prices:           pricesFromProto(m.GetPrices()),
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
		Bitrate:     int32(r.Bitrate),
		Timestamps:  r.Timestamps,
		Options:     r.Options,
		Credentials: credentialsToProto(r.Credentials),
		Neighbours:  neighboursToProto(r.Neighbours),
		Markup:      r.Markup,
		Lexicons:    lexiconsToProto(r.Lexicons),
	}
}

func phonemesToProto(p PhonemeInput) *pluginpb.PhonemeInput {
	if p.Kind == "" {
		return nil
	}
	return &pluginpb.PhonemeInput{Kind: p.Kind, Alphabets: p.Alphabets, MaxLexicons: int32(p.MaxLexicons)}
}

func phonemesFromProto(p *pluginpb.PhonemeInput) PhonemeInput {
	return PhonemeInput{Kind: p.GetKind(), Alphabets: p.GetAlphabets(), MaxLexicons: int(p.GetMaxLexicons())}
}

func lexiconsToProto(ls []Lexicon) []*pluginpb.Lexicon {
	if len(ls) == 0 {
		return nil
	}
	out := make([]*pluginpb.Lexicon, len(ls))
	for i, l := range ls {
		out[i] = &pluginpb.Lexicon{Id: l.ID, Version: l.Version, Document: l.Document}
	}
	return out
}

func lexiconsFromProto(ls []*pluginpb.Lexicon) []Lexicon {
	if len(ls) == 0 {
		return nil
	}
	out := make([]Lexicon, len(ls))
	for i, l := range ls {
		out[i] = Lexicon{ID: l.GetId(), Version: l.GetVersion(), Document: l.GetDocument()}
	}
	return out
}

func neighboursToProto(n *Neighbours) *pluginpb.Neighbours {
	if n == nil {
		return nil
	}
	return &pluginpb.Neighbours{PreviousText: n.PreviousText, NextText: n.NextText, PreviousIds: n.PreviousIDs}
}

func neighboursFromProto(n *pluginpb.Neighbours) *Neighbours {
	if n == nil {
		return nil
	}
	return &Neighbours{PreviousText: n.GetPreviousText(), NextText: n.GetNextText(), PreviousIDs: n.GetPreviousIds()}
}

func synthesizeRequestFromProto(r *pluginpb.SynthesizeRequest) *SynthesizeRequest {
	return &SynthesizeRequest{
		Model:       r.GetModel(),
		Voice:       r.GetVoice(),
		Text:        r.GetText(),
		Speed:       r.GetSpeed(),
		Format:      r.GetFormat(),
		SampleRate:  int(r.GetSampleRate()),
		Bitrate:     int(r.GetBitrate()),
		Timestamps:  r.GetTimestamps(),
		Options:     r.GetOptions(),
		Credentials: credentialsFromProto(r.GetCredentials()),
		Neighbours:  neighboursFromProto(r.GetNeighbours()),
		Markup:      r.GetMarkup(),
		Lexicons:    lexiconsFromProto(r.GetLexicons()),
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
		ContextId: r.ContextID,
	}
	out.Billed = billedToProto(r.Billed)
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
		ContextID: r.GetContextId(),
	}
	out.Billed = billedFromProto(r.GetBilled())
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
		Rule:       r.Rule,
	}
}

func moderationResultFromProto(r *pluginpb.ModerationResult) *ModerationResult {
	return &ModerationResult{
		Decision:   r.GetDecision(),
		Category:   r.GetCategory(),
		Confidence: r.GetConfidence(),
		Detail:     r.GetDetail(),
		Rule:       r.GetRule(),
	}
}

func moderationRulesToProto(rs []ModerationRule) []*pluginpb.ModerationRule {
	if len(rs) == 0 {
		return nil
	}
	out := make([]*pluginpb.ModerationRule, len(rs))
	for i, r := range rs {
		out[i] = &pluginpb.ModerationRule{Name: r.Name, Prompt: r.Prompt}
	}
	return out
}

func moderationRulesFromProto(rs []*pluginpb.ModerationRule) []ModerationRule {
	if len(rs) == 0 {
		return nil
	}
	out := make([]ModerationRule, len(rs))
	for i, r := range rs {
		out[i] = ModerationRule{Name: r.GetName(), Prompt: r.GetPrompt()}
	}
	return out
}

// clipCodec is the gRPC codec for the calls that carry whole clips (tens
// of KB to MBs of audio in one message): the host uses it for Synthesize,
// and it can serve as a plugin server's codec too. It is the standard
// protobuf codec, under the same name and so the same wire format and
// content type; what differs is how it handles large messages.
//
// The standard codec marshals a message over 32 KiB into a buffer from
// gRPC's default pool, whose tiers jump from 32 KiB to 1 MiB and which
// zeroes a buffer on every use: a 150 KB clip costs clearing 1 MiB. When
// receiving, it copies the message out of gRPC's frame buffers into such a
// buffer, then proto.Unmarshal copies the audio field again into a slice
// of its own.
//
// clipCodec marshals large messages into buffers from clipPool, which has
// power-of-two tiers and does not zero (marshalling writes every byte it
// returns). It receives a SynthesizeResponse by copying the message once
// into a slice of its exact length, not zeroed first, and letting Audio
// alias it; only the small remaining fields go through proto.Unmarshal.
// Hand-written with protowire because protobuf-go offers no public option
// to alias bytes fields.
type clipCodec struct{}

// audioField is the field number of SynthesizeResponse.audio.
var audioField = (&pluginpb.SynthesizeResponse{}).ProtoReflect().Descriptor().Fields().ByName("audio").Number()

// Name implements encoding.CodecV2: the standard codec's name, so the
// other side decodes and encodes as always.
func (clipCodec) Name() string { return grpcproto.Name }

// Marshal implements encoding.CodecV2.
func (clipCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return encoding.GetCodecV2(grpcproto.Name).Marshal(v)
	}
	size := proto.Size(m)
	if mem.IsBelowBufferPoolingThreshold(size) {
		// Small messages: the standard codec allocates exactly.
		return encoding.GetCodecV2(grpcproto.Name).Marshal(v)
	}
	buf := clipPool.Get(size)
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil || len(out) != size {
		clipPool.Put(buf)
		if err == nil {
			err = fmt.Errorf("marshal %T: %d bytes, sized %d", v, len(out), size)
		}
		return nil, err
	}
	*buf = out
	return mem.BufferSlice{mem.NewBuffer(buf, clipPool)}, nil
}

// Unmarshal implements encoding.CodecV2.
func (clipCodec) Unmarshal(data mem.BufferSlice, v any) error {
	resp, ok := v.(*pluginpb.SynthesizeResponse)
	if !ok {
		return encoding.GetCodecV2(grpcproto.Name).Unmarshal(data, v)
	}
	// bytes.Join allocates without zeroing what it then overwrites.
	var small [16][]byte
	pieces := small[:0]
	for _, b := range data {
		pieces = append(pieces, b.ReadOnlyData())
	}
	return unmarshalClip(bytes.Join(pieces, nil), resp)
}

// unmarshalClip decodes a SynthesizeResponse from b, whose audio field
// (the last one, as protobuf's merge rule says) aliases b.
func unmarshalClip(b []byte, resp *pluginpb.SynthesizeResponse) error {
	var audio []byte
	hasAudio := false
	rest := make([]byte, 0, 256)
	for in := b; len(in) > 0; {
		num, typ, n := protowire.ConsumeTag(in)
		if n < 0 {
			return fmt.Errorf("decode SynthesizeResponse: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, in[n:])
		if m < 0 {
			return fmt.Errorf("decode SynthesizeResponse: %w", protowire.ParseError(m))
		}
		if num == audioField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(in[n:])
			audio, hasAudio = v, true
		} else {
			rest = append(rest, in[:n+m]...)
		}
		in = in[n+m:]
	}
	if err := proto.Unmarshal(rest, resp); err != nil {
		return fmt.Errorf("decode SynthesizeResponse: %w", err)
	}
	if hasAudio {
		resp.Audio = audio
	}
	return nil
}

// clipPool is the buffer pool of clipCodec: sync.Pools of power-of-two
// sizes from 64 KiB to MaxMessageBytes. Unlike gRPC's default pool it does
// not zero a buffer it hands out: its users overwrite every byte they use.
var clipPool = newTieredPool(16, 27)

// tieredPool is a mem.BufferPool of power-of-two tiers 2^min to 2^max
// bytes; larger buffers are allocated and dropped.
type tieredPool struct {
	min   int
	tiers []sync.Pool
}

func newTieredPool(minExp, maxExp int) *tieredPool {
	return &tieredPool{min: minExp, tiers: make([]sync.Pool, maxExp-minExp+1)}
}

// tier returns the index of the smallest tier holding n bytes, or -1.
func (p *tieredPool) tier(n int) int {
	i := max(bits.Len(uint(n-1)), p.min) - p.min
	if i >= len(p.tiers) {
		return -1
	}
	return i
}

// Get implements mem.BufferPool.
func (p *tieredPool) Get(n int) *[]byte {
	i := p.tier(n)
	if i < 0 {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[i].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(i+p.min))
	return &b
}

// Put implements mem.BufferPool.
func (p *tieredPool) Put(b *[]byte) {
	c := cap(*b)
	if i := p.tier(c); i >= 0 && c == 1<<(i+p.min) {
		p.tiers[i].Put(b)
	}
}

func planToProto(p *Plan) *pluginpb.HTTPPlan {
	return &pluginpb.HTTPPlan{
		Method:      p.Method,
		Url:         p.URL,
		Header:      p.Header,
		Body:        p.Body,
		MediaType:   p.MediaType,
		FrameSize:   int32(p.FrameSize),
		MaxAttempts: int32(p.MaxAttempts),
		TimeoutMs:   p.Timeout.Milliseconds(),
		ReuseForMs:  p.ReuseFor.Milliseconds(),

		BilledHeaders: p.BilledHeaders,
	}
}

func planFromProto(p *pluginpb.HTTPPlan) *Plan {
	return &Plan{
		Method:      p.GetMethod(),
		URL:         p.GetUrl(),
		Header:      p.GetHeader(),
		Body:        p.GetBody(),
		MediaType:   p.GetMediaType(),
		FrameSize:   int(p.GetFrameSize()),
		MaxAttempts: int(p.GetMaxAttempts()),
		Timeout:     time.Duration(p.GetTimeoutMs()) * time.Millisecond,
		ReuseFor:    time.Duration(p.GetReuseForMs()) * time.Millisecond,

		BilledHeaders: p.GetBilledHeaders(),
	}
}

func failureToProto(f *Failure) *pluginpb.Failure {
	return &pluginpb.Failure{
		Status:      int32(f.Status),
		Header:      f.Header,
		Body:        f.Body,
		Credentials: credentialsToProto(f.Credentials),
	}
}

func failureFromProto(f *pluginpb.Failure) *Failure {
	return &Failure{
		Status:      int(f.GetStatus()),
		Header:      f.GetHeader(),
		Body:        f.GetBody(),
		Credentials: credentialsFromProto(f.GetCredentials()),
	}
}

func wordsToProto(ws []WordTimestamp) []*pluginpb.WordTimestamp {
	if len(ws) == 0 {
		return nil
	}
	out := make([]*pluginpb.WordTimestamp, len(ws))
	for i, w := range ws {
		out[i] = &pluginpb.WordTimestamp{Text: w.Text, Start: w.Start, End: w.End}
	}
	return out
}

func transcribeRequestToProto(r *TranscribeRequest) *pluginpb.TranscribeRequest {
	return &pluginpb.TranscribeRequest{
		Model:       r.Model,
		Audio:       r.Audio,
		MediaType:   r.MediaType,
		Language:    r.Language,
		Prompt:      r.Prompt,
		Credentials: credentialsToProto(r.Credentials),
	}
}

func transcribeRequestFromProto(r *pluginpb.TranscribeRequest) *TranscribeRequest {
	return &TranscribeRequest{
		Model:       r.GetModel(),
		Audio:       r.GetAudio(),
		MediaType:   r.GetMediaType(),
		Language:    r.GetLanguage(),
		Prompt:      r.GetPrompt(),
		Credentials: credentialsFromProto(r.GetCredentials()),
	}
}

func transcriptToProto(t *Transcript) *pluginpb.Transcript {
	out := &pluginpb.Transcript{Text: t.Text, Language: t.Language, Words: make([]*pluginpb.WordTimestamp, len(t.Words))}
	for i, w := range t.Words {
		out.Words[i] = &pluginpb.WordTimestamp{Text: w.Text, Start: w.Start, End: w.End}
	}
	return out
}

func wordsFromProto(ws []*pluginpb.WordTimestamp) []WordTimestamp {
	if len(ws) == 0 {
		return nil
	}
	out := make([]WordTimestamp, len(ws))
	for i, w := range ws {
		out[i] = WordTimestamp{Text: w.GetText(), Start: w.GetStart(), End: w.GetEnd()}
	}
	return out
}

func streamEventToProto(e *StreamEvent) *pluginpb.StreamEvent {
	return &pluginpb.StreamEvent{MediaType: e.MediaType, Audio: e.Audio, Words: wordsToProto(e.Words), Warning: e.Warning}
}

func streamEventFromProto(e *pluginpb.StreamEvent) StreamEvent {
	return StreamEvent{MediaType: e.GetMediaType(), Audio: e.GetAudio(), Words: wordsFromProto(e.GetWords()), Warning: e.GetWarning()}
}

func transcriptFromProto(t *pluginpb.Transcript) *Transcript {
	out := &Transcript{Text: t.GetText(), Language: t.GetLanguage(), Words: make([]WordTimestamp, len(t.GetWords()))}
	for i, w := range t.GetWords() {
		out.Words[i] = WordTimestamp{Text: w.GetText(), Start: w.GetStart(), End: w.GetEnd()}
	}
	return out
}

// billedToProto converts what a call was billed; nil for none.
func billedToProto(b []BilledUsage) []*pluginpb.BilledUsage {
	if len(b) == 0 {
		return nil
	}
	out := make([]*pluginpb.BilledUsage, len(b))
	for i, u := range b {
		out[i] = &pluginpb.BilledUsage{Unit: u.Unit, Quantity: u.Quantity}
	}
	return out
}

// billedFromProto converts what a call was billed; nil for none.
func billedFromProto(b []*pluginpb.BilledUsage) []BilledUsage {
	if len(b) == 0 {
		return nil
	}
	out := make([]BilledUsage, len(b))
	for i, u := range b {
		out[i] = BilledUsage{Unit: u.GetUnit(), Quantity: u.GetQuantity()}
	}
	return out
}
