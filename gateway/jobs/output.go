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
//
// A lossy file (MP3, Opus) with a loudness target is measured after it
// is encoded, as a clip's answer is (audio.EncodeLoudness): the encoder
// moves the true peak (Opus by one to three dB after heavy limiting,
// erratically: a peak or two of the file) and the loudness (Opus at
// speech bitrates half a LU down). The file is decoded as it is read
// from disk (audio.MeasureEncoded, libmpg123 and libopus), never held;
// when its true peak is over the target's (less the decoders' margin,
// audio.LossyPeakMarginDb), or its loudness off by more than
// lossyJobToleranceLU, the leveling is planned again (LongLeveling.
// Replan) with the encoder's overshoot raised by what the peak was over
// and the loudness aim moved by what it missed, and the chunks are
// encoded again, at most lossyJobPasses times in all (and once more,
// with the loudness lowered, when none of them is under the ceiling
// itself, give or take ceilingToleranceDb). The limiter's ceiling
// follows the measured overshoot and the gain is searched again under
// it, so a file that overshot keeps its loudness (a trim after
// the limiter, as before, took a whole dB of loudness for every dB of
// peak, and its correction was held by a guessed factor: a short eSpeak
// file in Opus at -16 LUFS came out at -18.6). Each pass reads and
// encodes the whole job again, so only a file that missed pays for it;
// the true peak wins over the loudness (of the passes, the one under the
// peak and nearest the loudness is kept). A file that ends quieter than
// its target says so in the job's warnings (quieterWarning).
func (s *Service) join(ctx context.Context, j *store.Job, spec *Spec, dir string) (joined, error) {
	chunks, marks, total, served, err := s.layout(ctx, j, spec, dir)
	if err != nil {
		return joined{}, err
	}
	path := OutputPath(s.opts.Dir, j.ID, spec.Format)
	capts, err := s.newCaptions(j, spec)
	if err != nil {
		return joined{}, err
	}
	defer capts.close()
	var lev *leveling
	if t, byDefault, ok := s.fileTarget(j, spec); ok {
		lev = &leveling{target: t, byDefault: byDefault, aim: t.Integrated, headroomDb: audio.EncoderHeadroomDb(spec.Format)}
		if byDefault {
			// The chunks are at the organization's default already,
			// with no headroom: the file is encoded as it is first and
			// leveled only when it misses.
			lev.headroomDb = 0
		} else if err := s.planLeveling(ctx, j, spec, dir, chunks, lev); err != nil {
			return joined{}, err
		}
	}
	measure := lev != nil && (spec.Format == audio.FormatMP3 || spec.Format == audio.FormatOpus)
	// Each pass writes a file of its own; the best so far is kept (the
	// encoder's overshoot does not move smoothly with the gain, so a
	// later pass may come out worse).
	var best *encodedPass
	defer func() {
		if best != nil {
			os.Remove(best.path)
		}
	}()
	for pass := 1; ; pass++ {
		var c *captionFiles
		if pass == 1 {
			c = capts // the captions do not change with the leveling: written once
		}
		cur := &encodedPass{path: fmt.Sprintf("%s.%d.tmp", path, pass)}
		cur.size, cur.prov, err = s.encodeFile(ctx, j, spec, dir, cur.path, chunks, marks, total, served, lev, c)
		if err != nil {
			os.Remove(cur.path)
			return joined{}, err
		}
		if !measure {
			best = cur
			break
		}
		again, err := s.checkEncoded(j, spec, cur, lev, pass)
		if err != nil {
			os.Remove(cur.path)
			return joined{}, err
		}
		if best == nil || cur.better(best) {
			if best != nil {
				os.Remove(best.path)
			}
			best = cur
		} else {
			os.Remove(cur.path)
		}
		if !again || pass > lossyJobPasses || pass == lossyJobPasses && best.overCeilingDb <= ceilingToleranceDb {
			break
		}
		if pass == lossyJobPasses {
			// No file so far is under the ceiling itself (the
			// gateway's margin for other decoders aside, its tolerance
			// counted): a last pass trades loudness for it, the aim
			// lowered by what this one was over as the ceiling was.
			// Where the limiter's ceiling was not what set the peak
			// (the encoder's overshoot grows with the limiting that
			// keeps the loudness), the loudness is.
			lev.aim -= cur.peakOver
		}
		if err := s.planLeveling(ctx, j, spec, dir, chunks, lev); err != nil {
			return joined{}, err
		}
	}
	if err := capts.commit(); err != nil {
		return joined{}, err
	}
	if err := s.signFile(best.prov, j.ID); err != nil {
		return joined{}, problem.Wrap(problem.Internal, err, "the file's provenance record cannot be signed")
	}
	if err := os.Rename(best.path, path); err != nil {
		return joined{}, err
	}
	out := joined{size: best.size}
	if w := quieterWarning(lev, best, measure); w != "" {
		out.warnings = append(out.warnings, w)
	}
	s.indexFile(best.prov, j, spec, path, out.size)
	best = nil
	return out, nil
}

// joined is what join made of a job: its finished file's size, and the
// warnings the job finishes with (store.JobFinish.Warnings).
type joined struct {
	size     int64
	warnings []string
}

// quieterWarning is the job's warning when its finished file ends
// quieter than its loudness target (lev; nil: none), as a clip's answer
// warns (speech's missedLoudnessWarning); "" when it does not. A lossy
// file (measured) is judged by what its best pass measured after the
// encoder, quieter by more than lossyJobToleranceLU: under a ceiling the
// limiter cannot reach the loudness under (more than 30 dB of limiting),
// or after the last pass traded loudness for the true peak. A lossless
// file is not measured after its encoder: its plan says whether the
// target was out of reach (LongLeveling.Missed, half a LU as for clips).
// Silence (gated, or measured as -Inf) warns of nothing.
func quieterWarning(lev *leveling, best *encodedPass, measured bool) string {
	if lev == nil {
		return ""
	}
	var got float64
	switch {
	case measured:
		if math.IsInf(best.off, 0) || math.IsNaN(best.off) || best.off >= -lossyJobToleranceLU {
			return ""
		}
		got = lev.target.Integrated + best.off
	case lev.planned && !lev.plan.Gated && lev.plan.Missed:
		got = lev.plan.OutputLufs
	default:
		return ""
	}
	whose := "the job's loudness target"
	if lev.byDefault {
		whose = "the organization's loudness target"
	}
	return fmt.Sprintf("The file could not reach %s, %g LUFS under a true peak of %g dBTP: it is at %.1f LUFS, as loud as the ceiling allows, and quieter than asked.",
		whose, lev.target.Integrated, lev.target.TruePeak, got)
}

// encodedPass is one encoding of a job's file, and what it measured
// (lossy files with a loudness target).
type encodedPass struct {
	path string
	size int64
	prov *fileProvenance
	// peakOver is how far its true peak is over the target's less the
	// decoders' margin (0: under), overCeilingDb how far over the
	// target's itself (negative: under); off how far its loudness is
	// from the target's, in LU.
	peakOver, overCeilingDb, off float64
}

// better reports whether p is a better file than q: a lower overshoot,
// else a loudness nearer the target.
func (p *encodedPass) better(q *encodedPass) bool {
	if p.peakOver != q.peakOver {
		return p.peakOver < q.peakOver
	}
	return math.Abs(p.off) < math.Abs(q.off)
}

const (
	// lossyJobPasses bounds the encode-measure passes of a lossy job
	// file with a loudness target (as lossyPasses does a clip's), but
	// for a last one when none of them was under the true peak.
	lossyJobPasses = 3
	// lossyJobToleranceLU is how far from its target a lossy job file's
	// loudness may measure without another pass (a clip is held to 0.1
	// LU; a job's pass costs the whole file again).
	lossyJobToleranceLU = 1.0
	// ceilingToleranceDb is how far over the ceiling by the gateway's
	// own meter a file may be kept without the last pass that trades
	// loudness for the peak: what answers are held to by FFmpeg's meter
	// (docs/loudness.md, "How it is tested"), and about what two true-
	// peak meters differ by. A file a hundredth of a dB over would lose
	// a LU and more for it.
	ceilingToleranceDb = 0.1
)

// leveling is how a job's file is leveled to its target: LevelLong's
// plan (none until planned: a file at an organization's default is
// encoded as it is first), the loudness it was planned to (aim) and the
// encoder's overshoot its ceiling leaves under the target's
// (headroomDb). Aim and headroom start at the target's loudness and
// audio.EncoderHeadroomDb (0 for a file not planned), and are corrected
// by what each encoded file measured.
type leveling struct {
	target audio.LoudnessTarget
	// byDefault says target is the organization's default, not the
	// job's own (fileTarget).
	byDefault       bool
	plan            audio.LongLeveling
	planned         bool
	aim, headroomDb float64
}

// fileTarget is the loudness target j's file is held to at the join:
// the job's own; else, for a lossy file, its organization's default
// (byDefault). That default leveled every chunk as a PCM clip
// (audio.EncodeLoudness leaves no headroom for PCM), so an Opus file of
// them came out over the ceiling (eSpeak at -16 LUFS under -1 dBTP: -0.1
// dBTP): it is measured after its encoder and leveled again when it
// misses. A WAV file's chunks are at the default already.
func (s *Service) fileTarget(j *store.Job, spec *Spec) (t audio.LoudnessTarget, byDefault, ok bool) {
	if spec.Loudness != nil {
		return spec.Loudness.target(), false, true
	}
	if s.orgLoudness == nil || audio.EncoderHeadroomDb(spec.Format) == 0 {
		return audio.LoudnessTarget{}, false, false
	}
	t, ok = s.orgLoudness(j.OrgID)
	return t, true, ok
}

// checkEncoded measures the encoded file of pass p against spec's
// target, notes how far it missed, and when it missed corrects lev's
// aim and headroom and returns true (plan and encode again). A file that
// cannot be read back or decoded is kept as it is (logged).
func (s *Service) checkEncoded(j *store.Job, spec *Spec, p *encodedPass, lev *leveling, pass int) (bool, error) {
	f, err := os.Open(p.path)
	if err != nil {
		return false, problem.Wrap(problem.Internal, err, "the finished file cannot be read")
	}
	defer f.Close()
	gotI, gotTP, err := audio.MeasureEncoded(bufio.NewReaderSize(f, 256<<10), spec.Format)
	if err != nil {
		// The file is whole (the encoder wrote it); failing the job for
		// a measurement would throw its hours of rendering away.
		s.log.Warn("job file not measured", zap.String("job", j.ID), zap.Int("pass", pass), zap.Error(err))
		return false, nil
	}
	t := lev.target
	over := gotTP - (t.TruePeak - audio.LossyPeakMarginDb(spec.Format))
	off := gotI - t.Integrated
	p.peakOver, p.overCeilingDb, p.off = max(over, 0), gotTP-t.TruePeak, off
	again := !math.IsInf(gotI, -1) && (over > 0 || math.Abs(off) > lossyJobToleranceLU)
	s.log.Info("job file measured", zap.String("job", j.ID), zap.Int("pass", pass), zap.Float64("lufs", gotI),
		zap.Float64("true_peak_dbtp", gotTP), zap.Float64("aim_lufs", lev.aim), zap.Float64("headroom_db", lev.headroomDb),
		zap.Bool("again", again))
	if again {
		// The headroom under the ceiling is the encoder's overshoot: it
		// grows by what the peak was over. Headroom left unused is kept
		// (the overshoot moves by a dB or more from one gain to the
		// next). The aim moves only for a loudness off by more than the
		// tolerance: under heavy limiting a LU more costs some 6 dB more
		// limiting (eSpeak at -16 LUFS), and the encoder's overshoot
		// grows with it, so chasing Opus's usual half a LU would push
		// the next pass's peak over again.
		if math.Abs(off) > lossyJobToleranceLU {
			lev.aim = math.Min(lev.aim-off, audio.MaxIntegratedLufs)
		}
		lev.headroomDb += max(over, 0)
	}
	return again, nil
}

// encodeFile writes j's file to path from its chunk files, leveled to
// lev (nil: not leveled), with captions (nil: none written in this
// pass), and returns its size and provenance (its hash and mark).
func (s *Service) encodeFile(ctx context.Context, j *store.Job, spec *Spec, dir, path string, chunks []placed, marks []chapterMark,
	total int64, served string, lev *leveling, capts *captionFiles) (int64, *fileProvenance, error) {
	prov := s.newFileProvenance(j, spec, served)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, nil, problem.Wrap(problem.Internal, err, "the finished file cannot be written")
	}
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
			return 0, nil, err
		}
		sink = func(p []byte) error { _, err := w.Write(p); return err }
		finish = func() error { return writeWAVTrailer(w, rate, total, marks) }
	default:
		if spec.Format == audio.FormatMP3 {
			if _, err := w.Write(mergeID3(id3Chapters(marks, rate), prov.id3())); err != nil {
				return 0, nil, err
			}
		}
		enc, err := audio.NewStreamEncoderComments(rate, audio.Output{Format: spec.Format, Bitrate: spec.Bitrate}, append(opusChapters(marks, rate), prov.comments()...))
		if err != nil {
			return 0, nil, problem.Wrap(problem.Internal, err, "the finished file cannot be encoded")
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
	if lev != nil && lev.planned && !lev.plan.Gated {
		sink, finish = leveled(spec.Rate, lev, sink, finish)
	}
	var done func(placed) error
	if capts != nil {
		done = func(c placed) error { return capts.chunk(ctx, dir, c, float64(c.start)/float64(rate)) }
	}
	if err := walkPCM(ctx, dir, chunks, rate, sink, done); err != nil {
		return 0, nil, err
	}
	if err := finish(); err != nil {
		return 0, nil, problem.Wrap(problem.Internal, err, "the finished file cannot be written")
	}
	if err := w.Flush(); err != nil {
		return 0, nil, err
	}
	if err := f.Sync(); err != nil {
		return 0, nil, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	return size, prov, err
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

// planLeveling plans the leveling of j's joined audio to lev's aim under
// its headroom (audio.LevelLong): the joined PCM is measured in a pass
// over the chunk files, and again at trial gains when the limiter must
// work, so the whole file is leveled at one gain and never held in
// memory. A plan made again (an encoded file missed) is not measured
// again (LongLeveling.Replan).
func (s *Service) planLeveling(ctx context.Context, j *store.Job, spec *Spec, dir string, chunks []placed, lev *leveling) error {
	replay := replayChunks(ctx, dir, chunks, spec.Rate)
	aim := audio.LoudnessTarget{Integrated: lev.aim, TruePeak: lev.target.TruePeak}
	var plan audio.LongLeveling
	var err error
	if lev.planned {
		plan, err = lev.plan.Replan(spec.Rate, aim, lev.headroomDb, replay)
	} else {
		plan, err = audio.LevelLong(spec.Rate, aim, lev.headroomDb, replay)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return problem.Wrap(problem.Internal, err, "the job's audio cannot be measured")
	}
	lev.plan, lev.planned = plan, true
	s.logPlan(j, lev)
	return nil
}

// replayChunks feeds the joined PCM of chunks to its argument as floats,
// a chunk at a time: a pass of audio.LevelLong over the job's audio.
func replayChunks(ctx context.Context, dir string, chunks []placed, rate int) func(func([]float32) error) error {
	var fl []float32
	return func(f func([]float32) error) error {
		return walkPCM(ctx, dir, chunks, rate, func(p []byte) error {
			fl = pcmFloats(p, fl[:0])
			return f(fl)
		}, nil)
	}
}

func (s *Service) logPlan(j *store.Job, lev *leveling) {
	p := lev.plan
	s.log.Info("job leveled", zap.String("job", j.ID), zap.Float64("input_lufs", p.InputLufs),
		zap.Float64("aim_lufs", lev.aim), zap.Float64("output_lufs", p.OutputLufs), zap.Float64("gain_db", p.GainDb),
		zap.Float64("ceiling_dbtp", p.CeilingDbtp), zap.Bool("limited", p.Limited), zap.Bool("missed", p.Missed),
		zap.Int("passes", p.Passes))
}

// leveled wraps the finished file's sink (and finish) in lev: the
// plan's gain and limiter.
func leveled(rate int, lev *leveling, sink func([]byte) error, finish func() error) (func([]byte) error, func() error) {
	l := audio.NewFixedLeveler(rate, lev.plan.GainDb, lev.plan.CeilingDbtp)
	var in, out []float32
	var b []byte
	emit := func(out []float32) error {
		b = floatsPCM(out, b[:0])
		return sink(b)
	}
	return func(p []byte) error {
			in = pcmFloats(p, in[:0])
			out = l.Write(in, out[:0])
			return emit(out)
		}, func() error {
			out = l.Flush(out[:0])
			if err := emit(out); err != nil {
				return err
			}
			return finish()
		}
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
