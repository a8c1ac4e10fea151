package speech

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// streamFormat is the format every piece of a split text is streamed in:
// raw PCM when the model offers it (pieces then join byte for byte, and
// the joins can be faded), else the model's first format.
func streamFormat(m *sdk.Model) string {
	if slices.Contains(m.OutputFormats, sdk.FormatPCM) {
		return sdk.FormatPCM
	}
	if len(m.OutputFormats) > 0 {
		return m.OutputFormats[0]
	}
	return ""
}

// pieceSource streams a text of several pieces: the first piece live from
// the provider's stream, so the first audio leaves as soon as the
// provider's does, and each later piece as a whole clip rendered ahead of
// need, at most limits.piece_concurrency of them rendered and not yet
// sent at once (which bounds the memory a slow client can hold). Pieces
// play in order. PCM joins are faded like joinPieces does; a WAV piece
// loses its header after the first.
type pieceSource struct {
	// job is the stream's; the pieces' billed figures go to it.
	job    *Job
	first  Source
	ctx    context.Context
	cancel context.CancelFunc
	format string
	rate   int // PCM sample rate, for the fades
	// held is the end of the first piece kept back to fade it out once
	// the piece ends.
	held      []byte
	firstDone bool
	results   []chan pieceBytes
	slots     chan struct{}
	next      int // the next later piece to send
	err       error
}

// pieceBytes is one later piece, ready to send.
type pieceBytes struct {
	data []byte
	// billed is what the provider said the piece was billed.
	billed []sdk.BilledUsage
	err    error
}

// openPieces starts streaming j's pieces; j has more than one.
func (s *Service) openPieces(ctx context.Context, j *Job, first Source) *pieceSource {
	ctx, cancel := context.WithCancel(ctx)
	ps := &pieceSource{job: j, first: first, ctx: ctx, cancel: cancel, format: streamFormat(j.Model), next: 1,
		results: make([]chan pieceBytes, len(j.pieces)), slots: make(chan struct{}, s.limits.PieceConcurrency)}
	for k := 1; k < len(j.pieces); k++ {
		ps.results[k] = make(chan pieceBytes, 1)
	}
	go func() {
		for k := 1; k < len(j.pieces); k++ {
			select {
			case ps.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				data, billed, err := s.renderStreamPiece(ctx, j, k, ps.format)
				ps.results[k] <- pieceBytes{data: data, billed: billed, err: err}
			}()
		}
	}()
	return ps
}

// renderStreamPiece renders piece k of j whole, in format, ready to be
// appended to the stream, with what the provider said it billed.
func (s *Service) renderStreamPiece(ctx context.Context, j *Job, k int, format string) (data []byte, billed []sdk.BilledUsage, err error) {
	// The pieces of a stream render concurrently, the first as a
	// stream whose provider id is not known: they get the texts around
	// them, never ids (see Job.neighbours).
	req := j.requestIn(j.pieces[k], format)
	req.Neighbours = j.neighbours(k, nil)
	resp, release, err := s.renderPooled(ctx, j, req)
	if err != nil {
		return nil, nil, fmt.Errorf("piece %d of %d: %w", k+1, len(j.pieces), err)
	}
	// The clip outlives the call: copy it out of a pooled buffer.
	data = slices.Clone(resp.Audio)
	if release != nil {
		release()
	}
	if len(data) == 0 {
		return nil, nil, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("piece %d of %d: the provider returned no audio", k+1, len(j.pieces))}
	}
	mt, err := audio.ParseMediaType(resp.MediaType)
	if err != nil {
		return nil, nil, err
	}
	switch mt.Format {
	case audio.FormatWAV:
		data = wavData(data)
	case audio.FormatPCM:
		n := int(joinFade * float64(mt.Rate))
		fadePCM(data, n, true)
		if k < len(j.pieces)-1 {
			fadePCM(data, n, false)
		}
	}
	return data, resp.Billed, nil
}

func (ps *pieceSource) MediaType() string { return ps.first.MediaType() }

// Next returns the first piece's audio as it arrives, then each later
// piece in order.
func (ps *pieceSource) Next() ([]byte, error) {
	if ps.err != nil {
		return nil, ps.err
	}
	if !ps.firstDone {
		b, err := ps.nextFirst()
		switch {
		case err == nil:
			return b, nil
		case !errors.Is(err, io.EOF):
			// The first piece failed: send what it gave, then fail.
			ps.err = err
			if len(b) > 0 {
				return b, nil
			}
			return nil, err
		case len(b) > 0:
			return b, nil
		}
	}
	if ps.next >= len(ps.results) {
		return nil, io.EOF
	}
	var r pieceBytes
	select {
	case r = <-ps.results[ps.next]:
	case <-ps.ctx.Done():
		r.err = ps.ctx.Err()
	}
	<-ps.slots
	ps.next++
	ps.job.streamBilled = addBilled(ps.job.streamBilled, r.billed)
	if r.err != nil {
		ps.err = r.err
		return nil, r.err
	}
	return r.data, nil
}

// nextFirst relays the first piece's stream, holding back its last few
// milliseconds of PCM until it ends so they can be faded out.
func (ps *pieceSource) nextFirst() ([]byte, error) {
	b, err := ps.first.Next()
	if ps.rate == 0 {
		if mt, perr := audio.ParseMediaType(ps.first.MediaType()); perr == nil && mt.Format == audio.FormatPCM {
			ps.rate = mt.Rate
		} else {
			ps.rate = -1
		}
	}
	if ps.rate <= 0 {
		if err != nil {
			ps.firstDone = true
		}
		return b, err
	}
	hold := 2 * int(joinFade*float64(ps.rate))
	buf := append(ps.held, b...)
	if err != nil {
		ps.firstDone = true
		ps.held = nil
		if errors.Is(err, io.EOF) {
			fadePCM(buf[:len(buf)&^1], hold/2, false)
		}
		return buf, err
	}
	cut := max(len(buf)-hold, 0) &^ 1
	out := slices.Clone(buf[:cut])
	ps.held = append(ps.held[:0:0], buf[cut:]...)
	return out, nil
}

// Close stops every piece still rendering and the first piece's stream.
func (ps *pieceSource) Close() error {
	ps.cancel()
	err := ps.first.Close()
	// Pieces rendered but never sent (the client left) were billed too.
	for k := ps.next; k < len(ps.results); k++ {
		select {
		case r := <-ps.results[k]:
			ps.job.streamBilled = addBilled(ps.job.streamBilled, r.billed)
		default:
		}
	}
	if ps.err != nil && !errors.Is(ps.err, io.EOF) {
		return ps.err
	}
	return err
}

// fadePCM fades 16-bit little-endian PCM in over its first n samples, or
// out over its last n, along a raised cosine.
func fadePCM(pcm []byte, n int, in bool) {
	total := len(pcm) / 2
	n = min(n, total)
	for i := range n {
		g := 0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(n))
		k := i
		if !in {
			k = total - 1 - i
		}
		v := float64(int16(binary.LittleEndian.Uint16(pcm[2*k:])))
		binary.LittleEndian.PutUint16(pcm[2*k:], uint16(int16(math.Round(v*g))))
	}
}

// wavData returns the samples of a WAV file: what follows its data
// chunk's header (the whole input when it has none).
func wavData(b []byte) []byte {
	if len(b) < 12 || string(b[0:4]) != "RIFF" {
		return b
	}
	for p := 12; p+8 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[p+4:]))
		if string(b[p:p+4]) == "data" {
			return b[p+8:]
		}
		p += 8 + size + size%2
	}
	return b
}
