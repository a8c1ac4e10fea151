package speech

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// Long texts. A text longer than the model accepts in one call is cut into
// pieces (splitText), rendered concurrently (limits.piece_concurrency at
// once, started in order so the first pieces are ready first), decoded and
// joined end to end on PCM, with a short fade at each join so no
// discontinuity can click; word timestamps are offset by each piece's
// start. On /stream the pieces play in order as they arrive (pieceSource).
//
// Each piece carries its neighbours (sdk.Neighbours: the texts either
// side of it) so that a provider with continuity fields joins them
// smoothly. A model with Capabilities.Stitching conditions a piece on
// the provider's ids of the pieces before it, which exist only once
// those have been rendered: its clip pieces render one after another,
// each given the ids of up to three pieces before it. Stream pieces keep
// rendering concurrently (the first is a stream whose id is not known)
// and get the texts only.

// alignPieceChars bounds the pieces whose words the gateway times itself
// (aligned or stt): about five minutes of speech, which keeps one
// alignment's work and a speech-to-text upload well inside their limits
// whatever the model accepts.
const alignPieceChars = 5000

// joinFade is the fade out and in at each join of pieces: long enough
// that a join inside a sound cannot click, short enough to be inaudible
// at the silence that usually sits there.
const joinFade = 0.005

// piece is one rendered piece of a text.
type piece struct {
	clip      *audio.Clip
	mediaType string
	// raw is the provider's own bytes, kept only when a single piece
	// passes through untouched; release returns them to their pool.
	raw     []byte
	release func()
	timed
	warnings []string
	// contextID is the provider's id of the piece
	// (sdk.SynthesizeResponse.ContextID), for the pieces after it.
	contextID string
	// billed is what the provider said the piece was billed.
	billed []sdk.BilledUsage
}

// neighbours is the context of piece k of j's pieces, nil when the text
// is whole. prev are the pieces rendered before k, in order, when j's
// model stitches by id (Capabilities.Stitching): their provider ids, up
// to sdk.MaxPreviousIDs of the nearest, go with it.
func (j *Job) neighbours(k int, prev []*piece) *sdk.Neighbours {
	if len(j.pieces) < 2 {
		return nil
	}
	n := &sdk.Neighbours{}
	// Neighbouring texts are context, never markup: phoneme marks are
	// taken out (the words as written stay).
	if k > 0 {
		n.PreviousText = stripMarks(j.pieces[k-1])
	}
	if k < len(j.pieces)-1 {
		n.NextText = stripMarks(j.pieces[k+1])
	}
	for i := max(0, k-sdk.MaxPreviousIDs); i < k && i < len(prev); i++ {
		if prev[i] != nil && prev[i].contextID != "" {
			n.PreviousIDs = append(n.PreviousIDs, prev[i].contextID)
		}
	}
	return n
}

// pieceLimit is the longest piece j's model is sent.
func (s *Service) pieceLimit(j *Job) int {
	limit := j.Model.MaxTextChars
	if limit <= 0 {
		limit = DefaultModelTextChars
	}
	if j.timing == SourceAligned || j.timing == SourceSTT {
		limit = min(limit, alignPieceChars)
	}
	return limit
}

// renderPieces renders every piece of j as a whole clip, timing their
// words when j asks for timestamps, at most limits.piece_concurrency at
// once. The first failure cancels the rest.
func (s *Service) renderPieces(ctx context.Context, j *Job, ask sdk.Encoding, keepRaw bool) ([]*piece, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]*piece, len(j.pieces))
	errs := make([]error, len(j.pieces))
	// A stitching model's pieces render in order, one at a time: each
	// needs the ids of those before it. A slot is given back only after
	// its piece is stored in out, so the next piece reads it safely.
	stitch := j.Model.Capabilities.Stitching && len(j.pieces) > 1
	conc := s.limits.PieceConcurrency
	if stitch {
		conc = 1
	}
	slots := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for k := range j.pieces {
		// Taking the slot here, not in the goroutine, starts the pieces
		// in order: the first ones are needed first.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			var prev []*piece
			if stitch {
				prev = out[:k]
			}
			out[k], errs[k] = s.renderPiece(ctx, j, k, j.neighbours(k, prev), ask, keepRaw)
			if errs[k] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			releaseAll(out)
			return nil, fmt.Errorf("piece %d of %d: %w", k+1, len(j.pieces), err)
		}
	}
	if err := ctx.Err(); err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

func releaseAll(ps []*piece) {
	for _, p := range ps {
		if p != nil && p.release != nil {
			p.release()
		}
	}
}

// renderPiece renders piece k of j, whose neighbours are nb, in encoding ask, decodes it and times
// its words. The references for aligning it render while the provider
// does.
func (s *Service) renderPiece(ctx context.Context, j *Job, k int, nb *sdk.Neighbours, ask sdk.Encoding, keepRaw bool) (*piece, error) {
	text := j.pieces[k]
	req := j.requestFor(text)
	req.Neighbours = nb
	req.Timestamps = j.timing == SourceNative
	req.Format, req.SampleRate, req.Bitrate = ask.Format, ask.SampleRate, ask.Bitrate
	var refs *references
	if j.timing == SourceAligned && strings.TrimSpace(withoutTags(stripMarks(text))) != "" {
		refs = s.startReferences(ctx, j, withoutTags(stripMarks(text)))
	}
	resp, release, err := s.renderPooled(ctx, j, req)
	if err != nil {
		return nil, err
	}
	if len(resp.Audio) == 0 || resp.MediaType == "" {
		if release != nil {
			release()
		}
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider returned no audio"}
	}
	clip, err := audio.Decode(resp.Audio, resp.MediaType)
	if err != nil {
		if release != nil {
			release()
		}
		return nil, fmt.Errorf("decode %s audio from %s: %w", resp.MediaType, j.Provider.ID, err)
	}
	p := &piece{clip: clip, mediaType: resp.MediaType, warnings: resp.Warnings, contextID: resp.ContextID, billed: resp.Billed}
	if keepRaw {
		p.raw, p.release = resp.Audio, release
	} else if release != nil {
		release()
	}
	switch {
	case j.timing != "" && strings.TrimSpace(withoutTags(text)) == "":
		p.words = []sdk.WordTimestamp{} // only tags the model performs: no words
	case j.timing == SourceNative:
		p.words = dropTagWords(resp.Timestamps)
		if p.words == nil {
			p.words = []sdk.WordTimestamp{}
		}
	case j.timing == SourceAligned:
		p.timed, err = s.alignPiece(ctx, j, clip, refs)
	case j.timing == SourceSTT:
		p.timed, err = s.transcribePiece(ctx, j, clip, withoutTags(stripMarks(text)))
	}
	if err != nil {
		if p.release != nil {
			p.release()
		}
		return nil, err
	}
	return p, nil
}

// piecesRendition negotiates j's clip when it renders piece by piece, or
// as one piece whose words the gateway times. One piece is asked for in
// the encoding the client wants when the model produces it and the
// gateway can decode it to time the words: its bytes then pass through.
// Anything else is decoded, joined (ReasonJoin), processed and encoded.
func (j *Job) piecesRendition() rendition {
	must := j.processing()
	if must == "" && len(j.pieces) > 1 {
		must = ReasonJoin
	}
	r := negotiate(j.Model, j.Params.Output, must)
	if r.passThrough() && !decodable(r.ask.Format) {
		r = negotiate(j.Model, j.Params.Output, ReasonTimestamps)
	}
	return r
}

// synthesizePieces renders j piece by piece (or as one piece whose words
// the gateway times), joins the pieces and applies whole-clip
// processing.
func (s *Service) synthesizePieces(ctx context.Context, j *Job) (*Result, error) {
	r := j.piecesRendition()
	keepRaw := r.passThrough() || r.conv.Reason == ReasonHeader
	pieces, err := s.renderPieces(ctx, j, r.ask, keepRaw)
	if err != nil {
		return nil, err
	}
	res := &Result{Source: j.timing, Match: math.NaN(), Conversion: r.conv}
	clips := make([]*audio.Clip, len(pieces))
	for k, p := range pieces {
		clips[k] = p.clip
		res.Warnings = append(res.Warnings, p.warnings...)
		res.providerMS += p.clip.Duration().Milliseconds()
		res.billed = addBilled(res.billed, p.billed)
	}
	var joined *audio.Clip
	offsets := []float64{0}
	if keepRaw {
		res.Audio, res.MediaType, res.release = pieces[0].raw, pieces[0].mediaType, pieces[0].release
		if !r.passThrough() {
			if err := wrapPCM(j, res); err != nil {
				return nil, err
			}
		}
	} else {
		if joined, offsets, err = joinPieces(clips); err != nil {
			return nil, fmt.Errorf("join pieces: %w", err)
		}
	}
	res.Pieces = offsets
	if j.Delivery == DeliverTimestamps {
		s.collectWords(j, res, pieces, offsets)
	}
	if !keepRaw {
		if res.Audio, res.MediaType, err = processClip(joined, r.out, j.Params); err != nil {
			return nil, fmt.Errorf("process the joined clip: %w", err)
		}
		if j.missedLoudness {
			res.Warnings = append(res.Warnings, missedLoudnessWarning(j.Params.Loudness.Target()))
		}
	}
	return res, nil
}

// collectWords puts the pieces' timestamps on the joined clip's timeline,
// maps them back through pronunciations and notes where they came from.
func (s *Service) collectWords(j *Job, res *Result, pieces []*piece, offsets []float64) {
	res.Timestamps = []sdk.WordTimestamp{}
	complete := true
	for k, p := range pieces {
		if p.words == nil {
			complete = false
			if p.warning != "" {
				res.Warnings = append(res.Warnings, p.warning)
			}
			continue
		}
		if j.timing == SourceAligned && (math.IsNaN(res.Match) || p.match > res.Match) {
			res.Match = p.match
		}
		if res.ReferenceVoice == "" {
			res.ReferenceVoice = p.reference
		}
		for _, w := range p.words {
			res.Timestamps = append(res.Timestamps, sdk.WordTimestamp{Text: w.Text, Start: w.Start + offsets[k], End: w.End + offsets[k]})
		}
	}
	if !complete {
		// Some pieces could not be timed: timestamps for only part of
		// the text would pass for the whole; give none.
		res.Timestamps = []sdk.WordTimestamp{}
		res.Source = ""
		return
	}
	if sp := j.Params.Stretch; sp != 0 && sp != 1 {
		for i := range res.Timestamps {
			res.Timestamps[i].Start /= sp
			res.Timestamps[i].End /= sp
		}
	}
	if j.subst != nil {
		ts, ok := j.subst.mapTimestamps(res.Timestamps)
		res.Timestamps = ts
		if !ok {
			res.Warnings = append(res.Warnings, "the provider's words did not line up with the pronunciation rules; timestamps are for the substituted text")
		}
	}
	switch j.timing {
	case SourceAligned:
		res.Warnings = append(res.Warnings, fmt.Sprintf("Word timestamps were aligned by the gateway: %s returns none, so its audio was matched against a synthetic reading of the text; expect boundaries within a few tens of milliseconds.", j.name()))
	case SourceSTT:
		res.Warnings = append(res.Warnings, fmt.Sprintf("Word timestamps come from a speech-to-text transcription (%s/%s) of the audio from %s, mapped onto the text's words.", s.align.STTProvider, s.align.STTModel, j.name()))
	}
}

// joinPieces joins decoded pieces end to end at the highest rate among
// them, fading joinFade out and in at each join so that no join clicks,
// and returns each piece's start in seconds.
func joinPieces(clips []*audio.Clip) (*audio.Clip, []float64, error) {
	if len(clips) == 1 {
		return clips[0], []float64{0}, nil
	}
	joined, offsets, err := audio.Concat(clips, audio.ConcatOptions{})
	if err != nil {
		return nil, nil, err
	}
	fade := int(joinFade * float64(joined.Rate))
	for _, off := range offsets[1:] {
		at := int(math.Round(off * float64(joined.Rate)))
		fadeEdges(joined.Samples, at, fade)
	}
	return joined, offsets, nil
}

// fadeEdges fades samples out over the n samples before at and in over
// the n from at, along a raised cosine: the join itself is at zero.
func fadeEdges(samples []float32, at, n int) {
	for i := range n {
		g := float32(0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(n)))
		if k := at - 1 - i; k >= 0 && k < len(samples) {
			samples[k] *= g
		}
		if k := at + i; k < len(samples) {
			samples[k] *= g
		}
	}
}

// processClip applies the request's whole-clip parameters to a joined
// clip and encodes it in out (negotiate's output). The order is
// audio.Process's: tempo, rate, level, encoding.
func processClip(c *audio.Clip, out audio.Output, p audio.Params) ([]byte, string, error) {
	var err error
	if st := p.Stretch; st != 0 && st != 1 {
		if c, err = audio.Stretch(c, st); err != nil {
			return nil, "", err
		}
	}
	if p.Loudness != nil {
		b, mt, rep, err := audio.EncodeLoudness(c, p.Loudness.Target(), out, audio.Limits{})
		if err == nil && p.Measured != nil {
			p.Measured(rep)
		}
		return b, mt, err
	}
	o, err := out.Resolve(c.Rate)
	if err != nil {
		return nil, "", err
	}
	if c, err = audio.Resample(c, o.SampleRate); err != nil {
		return nil, "", err
	}
	if p.VolumeDbfs != nil {
		audio.Normalize(c, *p.VolumeDbfs)
	}
	return audio.Encode(c, o)
}
