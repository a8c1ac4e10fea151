package edge

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// headerMark says how the answer's audio was marked as synthetic
// (provenance.MarkedID3, ...), or why it was not.
const headerMark = "X-Voxgate-Mark"

// headerMarkKey is headerMark for ResponseHeader.SetCanonical, which
// skips the normalising copy of a name that is canonical already.
var headerMarkKey = []byte(headerMark)

// provState is what an answer's provenance record is made from, gathered
// while the answer is written.
type provState struct {
	mark      *provenance.Mark
	how       string
	mediaType string
	// hasher hashes the bytes sent; nil when the organization turned
	// records off (then nothing is hashed, signed or fingerprinted).
	hasher *provenance.Hasher
	// kept is a stream's audio as sent, for its fingerprint once it
	// ended; nil once it outgrew maxIndexedStream (or for a clip).
	kept []byte
	// unmarked is the organization's choice of unmarked audio, read with
	// its records setting (newProvState).
	unmarked bool
}

// maxIndexedStream bounds the audio an answer may have to be
// fingerprinted: a longer clip or stream is not indexed (its record is
// still signed). A stream keeps its audio until it ends, a clip is
// copied out of its pooled buffer, and the indexer decodes it to float
// samples, so without a bound one long answer would cost several times
// its size in memory (TestWholeClipMemory). 4 MiB is about 87 s of
// 24 kHz 16-bit PCM and about 17 minutes of 32 kbit/s MP3.
const maxIndexedStream = 4 << 20

// write adds bytes sent to the record's hash, and to what a stream keeps
// for its fingerprint; a nil state does nothing. Hot path (every
// streamed piece): a hash and an append.
func (p *provState) write(b []byte) {
	if p == nil || p.hasher == nil {
		return
	}
	p.hasher.Write(b)
	if p.kept != nil {
		if len(p.kept)+len(b) > maxIndexedStream {
			p.kept = nil
			return
		}
		p.kept = append(p.kept, b...)
	}
}

// markFirst marks b, a whole clip or a stream's first piece, for the
// request of out, and says how in the answer's header. It returns the
// bytes to send in b's place and the state the record is made from; nil
// state when provenance is off in this gateway.
//
// inPlace lets the mark go into b's own array when it has room: only for
// a buffer the caller owns outright (a clip the gateway encoded), never a
// pooled one, which may be part of a larger buffer.
func (s *Server) markFirst(ctx *fasthttp.RequestCtx, c *exchange, provider, model string, b []byte, mediaType string, whole, inPlace bool) ([]byte, *provState) {
	ps := s.newProvState(c, mediaType)
	if ps == nil {
		return b, nil
	}
	b = s.markInto(c, ps, provider, model, b, whole, inPlace)
	ctx.Response.Header.SetCanonical(headerMarkKey, []byte(ps.how)) // a short constant: the copy stays on the stack
	return b, ps
}

// newProvState is the provenance state of an answer of c in mediaType
// under its organization's settings; nil when provenance is off here.
func (s *Server) newProvState(c *exchange, mediaType string) *provState {
	if s.prov == nil {
		return nil
	}
	o := s.orgProvenance(c.p.OrgID)
	ps := &provState{mediaType: mediaType, unmarked: o.Unmarked}
	if !o.NoRecords {
		ps.hasher = provenance.NewHasher()
	}
	return ps
}

// markInto marks b (see markFirst) and notes in ps how.
func (s *Server) markInto(c *exchange, ps *provState, provider, model string, b []byte, whole, inPlace bool) []byte {
	format := provenance.Container(ps.mediaType)
	switch {
	case ps.unmarked:
		ps.how = provenance.UnmarkedOff
	case format == "":
		ps.how = provenance.UnmarkedRaw
	default:
		m := s.prov.NewMark(c.reqID, provider, model, time.Now())
		head, tail, how, err := provenance.Insert(b, format, m, whole)
		switch {
		case err != nil:
			ps.how = provenance.UnmarkedHeader
			s.log.Warn("audio left unmarked", zap.String("request_id", c.reqID), zap.String("media_type", ps.mediaType), zap.Error(err))
		case head == nil:
			ps.how = how
		default:
			ps.how, ps.mark = how, m
			b = spliceHead(b, head, tail, inPlace)
		}
	}
	return b
}

// spliceHead returns b with its first tail bytes replaced by head: in
// b's own array when it has the room (the gateway's WAV encoder leaves
// audio.MarkRoom spare for this), so a long clip is not held twice in
// memory while it is sent; else in a new buffer.
func spliceHead(b, head []byte, tail int, inPlace bool) []byte {
	n := len(head) + len(b) - tail
	if inPlace && n <= cap(b) && tail <= len(b) {
		out := b[:n]
		copy(out[len(head):], b[tail:]) // memmove: the regions may overlap
		copy(out, head)
		return out
	}
	marked := make([]byte, 0, n)
	return append(append(marked, head...), b[tail:]...)
}

// markClip marks a clip in place (a pooled clip is copied out of its
// buffer, which goes back). Its hash and fingerprint are left to its
// seal (sealClip), off the request path.
func (s *Server) markClip(ctx *fasthttp.RequestCtx, c *exchange, out *speech.Spoken) *provState {
	res := out.Result
	b, ps := s.markFirst(ctx, c, out.Job.Provider.ID, out.Job.Model.ID, res.Audio, res.MediaType, true, !res.Pooled())
	if ps == nil {
		return nil
	}
	if ps.mark != nil {
		if len(b) > 0 && len(res.Audio) > 0 && &b[0] != &res.Audio[0] {
			res.Release() // marked in a new buffer: the old one is done
		}
		res.Audio = b
	}
	return ps
}

// signRow puts the answer's signed provenance record on its log row.
// complete is false for a stream that broke off.
func (s *Server) signRow(c *exchange, row *store.LogRow, ps *provState, complete bool) {
	if ps == nil || ps.hasher == nil {
		return
	}
	sum, n := ps.hasher.Sum()
	rec := &provenance.Record{RequestID: c.reqID, OrgID: c.p.OrgID, Gateway: s.prov.Gateway(),
		Provider: row.Provider, Model: row.Model, VoiceID: row.VoiceID, VoiceRef: row.VoiceRef,
		Time: c.start.UTC(), MediaType: ps.mediaType, SHA256: sum, Bytes: n, Complete: complete,
		Marked: ps.how, Mark: ps.mark}
	if row.VoiceRef != "" && c.live.Resources != nil {
		// The saved voice's consent, from the store's read cache; the
		// request's own context may be over (a stream's end).
		if v, err := c.live.Resources.Voice(context.WithoutCancel(c.ctx), c.p.OrgID, row.VoiceRef); err == nil && v.Consent != nil {
			rec.Consent = &provenance.Consent{AttestedBy: v.Consent.AttestedBy, Relation: v.Consent.Relation,
				Statement: v.Consent.Statement, Time: v.Consent.Time.UTC()}
		}
	}
	if complete && len(ps.kept) > 0 {
		s.prov.Index(c.p.OrgID, c.reqID, ps.mediaType, ps.kept)
	}
	signed, err := s.prov.Signer().SignRecord(rec)
	if err != nil {
		s.log.Error("provenance record not signed", zap.String("request_id", c.reqID), zap.Error(err))
		return
	}
	row.Provenance = signed
}

// orgProvenance is org's provenance settings from the organization
// directory (gateway.yaml's or the admin API's); the defaults for an
// organization it does not hold.
func (s *Server) orgProvenance(org string) store.OrgProvenance {
	if s.orgs == nil {
		return store.OrgProvenance{}
	}
	o, _ := s.orgs.Get(org)
	if o == nil {
		return store.OrgProvenance{}
	}
	return o.Provenance
}
