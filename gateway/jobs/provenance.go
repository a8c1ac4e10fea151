package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/store"
)

// Provenance. A job's finished file is marked as synthetic speech as a
// clip is (gateway/provenance: an ID3v2 tag in MP3, merged with the
// chapters' tag; LIST/INFO and iXML chunks in WAV; Vorbis comments in Ogg
// Opus, beside the chapters'), with the job's id as the request id, and
// its signed record (the SHA-256 of the whole file) is kept beside the
// file, served by GET /v1/provenance/{jobId} to the job's organization.

// provenanceFile is the name of a job's signed record in its folder.
const provenanceFile = "provenance.json"

// ProvenancePath is where job id's signed provenance record is.
func ProvenancePath(root, id string) string {
	return filepath.Join(jobDir(root, id), provenanceFile)
}

// fileProvenance is what the join needs to mark the file and sign its
// record: nil when the gateway signs nothing.
type fileProvenance struct {
	mark   *provenance.Mark
	how    string
	hasher *provenance.Hasher
	record provenance.Record
	// noRecord: the organization turned records off; the file keeps its
	// mark, and gets no signed record and no fingerprint.
	noRecord bool
}

// newFileProvenance returns the mark of job j's file (none when its
// organization turned marks off), served names the provider/model that
// rendered its first chunk.
func (s *Service) newFileProvenance(j *store.Job, spec *Spec, served string) *fileProvenance {
	if s.prov == nil {
		return nil
	}
	provider, model, _ := strings.Cut(served, "/")
	fp := &fileProvenance{hasher: provenance.NewHasher(), how: provenance.UnmarkedOff,
		noRecord: s.noRecords != nil && s.noRecords(j.OrgID)}
	now := s.now()
	if s.unmarked == nil || !s.unmarked(j.OrgID) {
		fp.mark = s.prov.NewMark(j.ID, provider, model, now)
		fp.how = map[string]string{"mp3": provenance.MarkedID3, "wav": provenance.MarkedRIFF, "opus": provenance.MarkedVorbis}[spec.Format]
	}
	fp.record = provenance.Record{RequestID: j.ID, OrgID: j.OrgID, Gateway: s.prov.Gateway(), Provider: provider, Model: model,
		VoiceID: spec.Voice.VoiceID, Time: now.UTC(), MediaType: MediaType(spec.Format), Marked: fp.how, Mark: fp.mark}
	if spec.Voice.VoiceID == "" {
		fp.record.VoiceRef = spec.Voice.Model + ":" + spec.Voice.Voice
	} else {
		fp.record.Consent = s.voiceConsent(j.OrgID, spec.Voice.VoiceID)
	}
	return fp
}

// voiceGetter is the store's saved voices, for a cloned voice's consent.
type voiceGetter interface {
	GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error)
}

// voiceConsent is the consent attestation of org's saved voice id, as a
// clip's record carries it; nil for a voice without one (or when the
// store cannot say: the record is still signed, without it).
func (s *Service) voiceConsent(org, id string) *provenance.Consent {
	vs, ok := s.store.(voiceGetter)
	if !ok {
		return nil
	}
	v, err := vs.GetVoice(context.Background(), org, id)
	if err != nil || v.Consent == nil {
		return nil
	}
	c := v.Consent
	return &provenance.Consent{AttestedBy: c.AttestedBy, Relation: c.Relation, Statement: c.Statement, Time: c.Time.UTC()}
}

// maxIndexedFile bounds the finished files fingerprinted for identify:
// the fingerprint worker holds and decodes the whole file (about 35
// minutes of 64 kbit/s MP3); a longer file is not indexed, its record
// is still signed.
const maxIndexedFile = 16 << 20

// indexFile hands the finished file at path to the fingerprint index,
// under the job's id, so that identify finds the job as it finds a clip.
func (s *Service) indexFile(fp *fileProvenance, j *store.Job, spec *Spec, path string, size int64) {
	if fp == nil || fp.noRecord || !s.prov.Indexing() || size > maxIndexedFile {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		s.log.Warn("job file not fingerprinted", zap.String("job_id", j.ID), zap.Error(err))
		return
	}
	s.prov.Index(j.OrgID, j.ID, MediaType(spec.Format), data)
}

// Write hashes the file's bytes as they are written.
func (fp *fileProvenance) Write(b []byte) (int, error) {
	fp.hasher.Write(b)
	return len(b), nil
}

// id3 is the ID3v2 tag of the mark (nil without one).
func (fp *fileProvenance) id3() []byte {
	if fp == nil || fp.mark == nil {
		return nil
	}
	head, _, _, _ := provenance.Insert(nil, "mp3", fp.mark, true)
	return head
}

// comments are the mark's Vorbis comments.
func (fp *fileProvenance) comments() [][2]string {
	if fp == nil || fp.mark == nil {
		return nil
	}
	var out [][2]string
	for _, f := range fp.mark.Fields() {
		out = append(out, [2]string{f.Name, f.Value})
	}
	return out
}

// riff marks a WAV header (RIFF, fmt, data chunk header).
func (fp *fileProvenance) riff(header []byte) ([]byte, error) {
	if fp == nil || fp.mark == nil {
		return header, nil
	}
	head, tail, _, err := provenance.Insert(header, "wav", fp.mark, true)
	if err != nil {
		return nil, err
	}
	return append(head, header[tail:]...), nil
}

// signFile signs the record of the file written and keeps it in the job's
// folder.
func (s *Service) signFile(fp *fileProvenance, id string) error {
	if fp == nil || fp.noRecord {
		return nil
	}
	fp.record.SHA256, fp.record.Bytes = fp.hasher.Sum()
	fp.record.Complete = true
	signed, err := s.prov.Signer().SignRecord(&fp.record)
	if err != nil {
		return err
	}
	return writeSynced(ProvenancePath(s.opts.Dir, id), []byte(signed))
}

// Provenance returns the signed provenance record of org's job id, once
// it has succeeded: store.ErrNotFound for another organization's job, a
// job not finished, or one finished before the gateway signed jobs.
func (s *Service) Provenance(ctx context.Context, org, id string) (string, error) {
	j, err := s.store.GetJob(ctx, org, id)
	if err != nil {
		return "", err
	}
	if j.State != store.JobSucceeded {
		return "", store.ErrNotFound
	}
	b, err := os.ReadFile(ProvenancePath(s.opts.Dir, id))
	if errors.Is(err, os.ErrNotExist) {
		return "", store.ErrNotFound
	}
	return string(b), err
}

// mergeID3 joins two ID3v2.4 tags (as id3Chapters and the mark write
// them: no extended header, no footer) into one, a or b possibly nil:
// players read only the first of two tags in a row.
func mergeID3(a, b []byte) []byte {
	switch {
	case len(a) < 10:
		return b
	case len(b) < 10:
		return a
	}
	frames := append(append([]byte(nil), a[10:]...), b[10:]...)
	out := append([]byte{'I', 'D', '3', 4, 0, 0}, synchsafe(len(frames))...)
	return append(out, frames...)
}
