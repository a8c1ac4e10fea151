package jobs

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Joining. The chunks' PCM is joined first and encoded once: encoding each
// chunk and joining the files would leave an encoder's priming and
// padding (MP3's, Opus's) at every boundary, heard as a gap or a click.
// Each chunk gets a short fade at both ends (a provider's audio need not
// start or end at zero) and silence after it: a pause between chunks, a
// longer one before a chapter.
const (
	fadeDuration   = 5 * time.Millisecond
	chunkPause     = 250 * time.Millisecond
	chapterPause   = time.Second
	outputBaseName = "output"
)

// OutputPath is where job id's finished file is, in format.
func OutputPath(root, id, format string) string {
	return filepath.Join(jobDir(root, id), outputBaseName+"."+extension(format))
}

// CaptionsPath is where job id's captions are, in format (srt or vtt).
func CaptionsPath(root, id, format string) string {
	return filepath.Join(jobDir(root, id), outputBaseName+"."+format)
}

func extension(format string) string {
	if format == audio.FormatOpus {
		return "ogg"
	}
	return format
}

// MediaType is the media type of a job's file in format.
func MediaType(format string) string {
	switch format {
	case audio.FormatMP3:
		return "audio/mpeg"
	case audio.FormatOpus:
		return "audio/ogg; codecs=opus"
	}
	return "audio/wav"
}

// placed is a chunk's place in the finished file.
type placed struct {
	index, chapter int
	// samples is the chunk's length, pause the silence after it, in
	// samples; start where it starts.
	samples, pause, start int64
}

// chapterMark is a chapter's span in the finished file, in samples.
type chapterMark struct {
	title      string
	start, end int64
}

// layout reads the chunks' lengths (their files' sizes) and places them.
// It holds a few numbers per chunk, not their audio.
func (s *Service) layout(ctx context.Context, j *store.Job, spec *Spec, dir string) ([]placed, []chapterMark, int64, string, error) {
	var out []placed
	served := ""
	for from := 0; from < j.ChunksTotal; from += chunkPage {
		page, err := s.store.JobChunks(ctx, j.ID, from, chunkPage)
		if err != nil {
			return nil, nil, 0, "", err
		}
		for _, c := range page {
			if served == "" {
				served = c.Served
			}
			fi, err := os.Stat(chunkPath(dir, c.Index, "pcm"))
			if err != nil {
				return nil, nil, 0, "", problem.Wrap(problem.Internal, err, "a chunk's audio is missing")
			}
			out = append(out, placed{index: c.Index, chapter: c.Chapter, samples: fi.Size() / 2})
		}
	}
	rate := int64(spec.Rate)
	var pos int64
	var marks []chapterMark
	for i := range out {
		if i+1 < len(out) {
			out[i].pause = rate * int64(chunkPause) / int64(time.Second)
			if out[i+1].chapter != out[i].chapter {
				out[i].pause = rate * int64(chapterPause) / int64(time.Second)
			}
		}
		out[i].start = pos
		if i == 0 || out[i].chapter != out[i-1].chapter {
			title := ""
			if c := out[i].chapter; c < len(spec.Chapters) {
				title = spec.Chapters[c].Title
			}
			if title == "" {
				title = fmt.Sprintf("Chapter %d", len(marks)+1)
			}
			if n := len(marks); n > 0 {
				marks[n-1].end = pos
			}
			marks = append(marks, chapterMark{title: title, start: pos})
		}
		pos += out[i].samples + out[i].pause
	}
	if n := len(marks); n > 0 {
		marks[n-1].end = pos
	}
	return out, marks, pos, served, nil
}

// join writes the finished file (and captions) of j from its chunk files
// and returns the file's size.
func (s *Service) join(ctx context.Context, j *store.Job, spec *Spec, dir string) (int64, error) {
	chunks, marks, total, served, err := s.layout(ctx, j, spec, dir)
	if err != nil {
		return 0, err
	}
	prov := s.newFileProvenance(j, spec, served)
	path := OutputPath(s.opts.Dir, j.ID, spec.Format)
	f, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, problem.Wrap(problem.Internal, err, "the finished file cannot be written")
	}
	defer os.Remove(path + ".tmp")
	defer f.Close()
	var out io.Writer = f
	if prov != nil {
		out = io.MultiWriter(f, prov)
	}
	w := bufio.NewWriterSize(out, 256<<10)
	var sink func([]byte) error
	var finish func() error
	rate := spec.Rate
	switch spec.Format {
	case audio.FormatWAV:
		if err := writeWAVHeader(w, rate, total, marks, prov.riff); err != nil {
			return 0, err
		}
		sink = func(p []byte) error { _, err := w.Write(p); return err }
		finish = func() error { return writeWAVTrailer(w, rate, total, marks) }
	default:
		if spec.Format == audio.FormatMP3 {
			if _, err := w.Write(mergeID3(id3Chapters(marks, rate), prov.id3())); err != nil {
				return 0, err
			}
		}
		enc, err := audio.NewStreamEncoderComments(rate, audio.Output{Format: spec.Format, Bitrate: spec.Bitrate}, append(opusChapters(marks, rate), prov.comments()...))
		if err != nil {
			return 0, problem.Wrap(problem.Internal, err, "the finished file cannot be encoded")
		}
		defer enc.Close()
		sink = func(p []byte) error {
			b, err := enc.Write(p)
			if err == nil {
				_, err = w.Write(b)
			}
			return err
		}
		finish = func() error {
			b, err := enc.Flush()
			if err == nil {
				_, err = w.Write(b)
			}
			return err
		}
	}
	capts, err := s.newCaptions(j, spec)
	if err != nil {
		return 0, err
	}
	defer capts.close()
	if spec.Loudness != nil {
		if sink, finish, err = s.leveled(ctx, j, spec, dir, chunks, sink, finish); err != nil {
			return 0, err
		}
	}
	err = walkPCM(ctx, dir, chunks, rate, sink, func(c placed) error {
		return capts.chunk(ctx, dir, c, float64(c.start)/float64(rate))
	})
	if err != nil {
		return 0, err
	}
	if err := finish(); err != nil {
		return 0, problem.Wrap(problem.Internal, err, "the finished file cannot be written")
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if err := capts.commit(); err != nil {
		return 0, err
	}
	if err := s.signFile(prov, j.ID); err != nil {
		return 0, problem.Wrap(problem.Internal, err, "the file's provenance record cannot be signed")
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return 0, err
	}
	s.indexFile(prov, j, spec, path, size)
	return size, nil
}

// walkPCM feeds the joined PCM of chunks to sink, one chunk file at a
// time: each chunk faded at its edges, then the silence after it; after
// a chunk, done (nil: nothing) is told of it. Every pass over a job's
// audio (the loudness passes and the encoding one) reads it this way.
func walkPCM(ctx context.Context, dir string, chunks []placed, rate int, sink func([]byte) error, done func(placed) error) error {
	var buf []byte
	var err error
	silence := make([]byte, 4096)
	fade := int(int64(rate) * int64(fadeDuration) / int64(time.Second))
	for _, c := range chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf, err = readInto(buf, chunkPath(dir, c.index, "pcm"))
		if err != nil {
			return problem.Wrap(problem.Internal, err, "a chunk's audio cannot be read")
		}
		fadeEdges(buf, fade)
		if err := sink(buf); err != nil {
			return problem.Wrap(problem.Internal, err, "the finished file cannot be written")
		}
		for left := c.pause * 2; left > 0; {
			n := min(left, int64(len(silence)))
			if err := sink(silence[:n]); err != nil {
				return err
			}
			left -= n
		}
		if done != nil {
			if err := done(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// leveled wraps the finished file's sink (and finish) in the job's
// loudness leveling (audio.LevelLong): the joined PCM is measured first,
// in a pass over the chunk files, and again at trial gains when the
// limiter must work, so the whole file is leveled at one gain and never
// held in memory.
func (s *Service) leveled(ctx context.Context, j *store.Job, spec *Spec, dir string, chunks []placed, sink func([]byte) error, finish func() error) (func([]byte) error, func() error, error) {
	rate := spec.Rate
	var fl []float32
	replay := func(f func([]float32) error) error {
		return walkPCM(ctx, dir, chunks, rate, func(p []byte) error {
			fl = pcmFloats(p, fl[:0])
			return f(fl)
		}, nil)
	}
	target := spec.Loudness.target()
	plan, err := audio.LevelLong(rate, target, spec.Format, replay)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, problem.Wrap(problem.Internal, err, "the job's audio cannot be measured")
	}
	s.log.Info("job leveled", zap.String("job", j.ID), zap.Float64("input_lufs", plan.InputLufs),
		zap.Float64("output_lufs", plan.OutputLufs), zap.Float64("gain_db", plan.GainDb), zap.Bool("limited", plan.Limited),
		zap.Bool("missed", plan.Missed), zap.Int("passes", plan.Passes))
	if plan.Gated {
		return sink, finish, nil // silence: nothing to level
	}
	lev := audio.NewFixedLeveler(rate, plan.GainDb, plan.CeilingDbtp)
	var in, out []float32
	var b []byte
	return func(p []byte) error {
			in = pcmFloats(p, in[:0])
			out = lev.Write(in, out[:0])
			b = floatsPCM(out, b[:0])
			return sink(b)
		}, func() error {
			out = lev.Flush(out[:0])
			if err := sink(floatsPCM(out, b[:0])); err != nil {
				return err
			}
			return finish()
		}, nil
}

// pcmFloats appends 16-bit little-endian PCM p to f as floats in [-1, 1).
func pcmFloats(p []byte, f []float32) []float32 {
	for i := 0; i+1 < len(p); i += 2 {
		f = append(f, float32(int16(binary.LittleEndian.Uint16(p[i:])))/32768)
	}
	return f
}

// floatsPCM appends f to b as 16-bit little-endian PCM, rounded and
// clamped.
func floatsPCM(f []float32, b []byte) []byte {
	for _, x := range f {
		v := math.Round(float64(x) * 32768)
		v = math.Max(-32768, math.Min(32767, v))
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(v)))
	}
	return b
}

// readInto reads path into buf's storage, grown as needed: one chunk's
// audio at a time.
func readInto(buf []byte, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, err
	}
	n := int(fi.Size()) &^ 1
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(f, buf)
	return buf, err
}

// fadeEdges fades 16-bit PCM in over its first n samples and out over
// its last n.
func fadeEdges(pcm []byte, n int) {
	samples := len(pcm) / 2
	n = min(n, samples/2)
	for i := range n {
		g := float64(i) / float64(n)
		for _, at := range []int{i, samples - 1 - i} {
			v := int16(binary.LittleEndian.Uint16(pcm[2*at:]))
			binary.LittleEndian.PutUint16(pcm[2*at:], uint16(int16(float64(v)*g)))
		}
	}
}

// captionFiles writes a job's captions, both formats, a chunk at a time.
type captionFiles struct {
	on      bool
	s       *Service
	j       *store.Job
	paths   [2]string
	files   [2]*os.File
	writers [2]*bufio.Writer
	cw      [2]*speech.CaptionWriter
}

func (s *Service) newCaptions(j *store.Job, spec *Spec) (*captionFiles, error) {
	c := &captionFiles{on: spec.Captions, s: s, j: j}
	if !c.on {
		return c, nil
	}
	for i, format := range []string{speech.CaptionsVTT, speech.CaptionsSRT} {
		c.paths[i] = CaptionsPath(s.opts.Dir, j.ID, format)
		f, err := os.OpenFile(c.paths[i]+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			c.close()
			return nil, problem.Wrap(problem.Internal, err, "the captions cannot be written")
		}
		c.files[i], c.writers[i], c.cw[i] = f, bufio.NewWriter(f), speech.NewCaptionWriter(format)
		if _, err := c.writers[i].WriteString(c.cw[i].Header()); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// chunk adds the captions of chunk p, which starts at offset seconds.
func (c *captionFiles) chunk(ctx context.Context, dir string, p placed, offset float64) error {
	if !c.on {
		return nil
	}
	b, err := os.ReadFile(chunkPath(dir, p.index, "json"))
	if err != nil {
		return problem.Wrap(problem.Internal, err, "a chunk's timestamps are missing")
	}
	var ts []sdk.WordTimestamp
	if err := json.Unmarshal(b, &ts); err != nil {
		return problem.Wrap(problem.Internal, err, "a chunk's timestamps cannot be read")
	}
	for i := range ts {
		ts[i].Start += offset
		ts[i].End += offset
	}
	page, err := c.s.store.JobChunks(ctx, c.j.ID, p.index, 1)
	if err != nil || len(page) != 1 {
		return problem.Wrap(problem.Internal, err, "a chunk's text cannot be read")
	}
	for i := range c.writers {
		if _, err := c.writers[i].WriteString(c.cw[i].Segment(page[0].Text, ts)); err != nil {
			return err
		}
	}
	return nil
}

func (c *captionFiles) commit() error {
	if !c.on {
		return nil
	}
	for i := range c.files {
		if err := c.writers[i].Flush(); err != nil {
			return err
		}
		if err := c.files[i].Sync(); err != nil {
			return err
		}
		if err := os.Rename(c.paths[i]+".tmp", c.paths[i]); err != nil {
			return err
		}
	}
	return nil
}

func (c *captionFiles) close() {
	for i, f := range c.files {
		if f != nil {
			f.Close()
			os.Remove(c.paths[i] + ".tmp")
		}
	}
}
