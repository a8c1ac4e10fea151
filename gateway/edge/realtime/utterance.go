package realtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// errCancelled is the cause of a context the client cancelled.
var errCancelled = errors.New("the client cancelled the context")

// segment is a piece of text ready to speak.
type segment struct {
	text  string
	flush bool
	// end is where the segment ends in the context's whole input (bytes),
	// for what-was-heard.
	end int
	// partial is text of the immediate aggregation, passed on as it came
	// (spaces included) rather than as a whole segment.
	partial bool
}

// maxHeardText bounds the input a context keeps to say what was heard:
// past it, spokenText stops growing (a context is bounded in time, but a
// fast provider could take a lot of text within it).
const maxHeardText = 1 << 20

// utterance is one context of a socket: the reader feeds it text, its
// worker goroutine moderates and speaks it segment by segment.
type utterance struct {
	s       *session
	id      string
	reqID   string
	live    *speech.Live
	base64  bool
	started time.Time
	// release gives back the configuration the context was started
	// with (Deps.Speech), when it ends.
	release func()

	ctx       context.Context
	cancel    context.CancelCauseFunc
	stop      context.CancelFunc // releases the context's timeout
	cancelled atomic.Bool        // by the client: drop its queued audio

	mu        sync.Mutex
	seg       segmenter
	queue     []segment
	pending   int  // bytes of text not yet handed to the worker's speech
	closed    bool // close received: no more text
	wake      chan struct{}
	firstText time.Time
	firstCut  time.Time // when the first segment was cut
	// aggregation is the context's input aggregation (aggSentence, ...);
	// immediate is aggImmediate on a provider input stream.
	aggregation string
	immediate   bool
	// text is the context's input as the client sent it (up to
	// maxHeardText), to cut spokenText from.
	text []byte

	// heard is what the socket's writer has sent of the context; only
	// the writer goroutine touches it.
	heard heardState
	// bytesPerSec converts audio bytes to time (worker side; 0 when the
	// format does not say, e.g. MP3 without a known bitrate).
	bytesPerSec float64
	// firstSent is when the first segment was handed to the provider and
	// segments how many were (worker side).
	firstSent time.Time
	segments  int
	// failoverWindow is how much audio a context may have sent and still
	// move to a fallback; queuedSec the audio queued so far and segAudio
	// the bytes of the segment being rendered (worker side).
	failoverWindow time.Duration
	queuedSec      float64
	segAudio       int
	// sent are the segments handed to the provider's input stream, and
	// timings the word timings of the context's audio (emit's side; read
	// by the worker once the stream or segment has ended): where a failed
	// provider stopped, for the failover's replay (replay.go).
	// streamTimings says whether the input stream sends timings.
	sent          []sentSegment
	timings       []sdk.WordTimestamp
	streamTimings bool

	firstAudio atomic.Int64 // unix nanos of the first audio written; 0 before
	// firstQueued is when the first audio frame was queued for the
	// socket: done uses it when the writer has not written that frame
	// yet (a busy machine), since the frame still goes out before done.
	firstQueued atomic.Int64
	mediaType   string // of the first audio (worker side)
	// hash hashes the audio queued for the client, for the context's
	// provenance record (worker side); nil without Deps.Provenance.
	hash *provenance.Hasher
}

// sentSegment is a segment handed to a provider's input stream.
type sentSegment struct {
	seg   segment
	words int // the words the provider got (Live.InputWords)
}

// heardState is what went out to the client of one context, kept by the
// socket's writer as it writes (docs/realtime.md, "Interruptions").
type heardState struct {
	audioSec float64             // audio written
	words    []sdk.WordTimestamp // word timings written (or noted), in order
	textEnd  int                 // input bytes whose whole audio was written (segment ends)
}

func newUtterance(s *session, id, reqID string, live *speech.Live, b64 bool, started time.Time, aggregation string) *utterance {
	ctx, cancel := context.WithCancelCause(s.ctx)
	ctx, stop := context.WithTimeout(ctx, s.h.deps.Limits.ContextTimeout)
	if aggregation == "" {
		aggregation = aggSentence
	}
	u := &utterance{s: s, id: id, reqID: reqID, live: live, base64: b64, started: started,
		ctx: ctx, cancel: cancel, stop: stop, wake: make(chan struct{}, 1), aggregation: aggregation}
	if s.h.deps.Provenance != nil {
		u.hash = provenance.NewHasher()
	}
	u.seg.clause = aggregation != aggSentence
	u.immediate = aggregation == aggImmediate && live.InputStreaming()
	return u
}

// The reader's side. Each call happens on the socket's reader goroutine.

// write appends text; complete segments go to the worker.
func (u *utterance) write(text string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return problem.New(problem.UnknownContext, "context %q takes no more text: close was sent", u.id)
	}
	if u.pending+len(text) > u.s.h.deps.Limits.MaxPendingText {
		return problem.New(problem.TextBufferFull, "context %q holds %d bytes of text not yet spoken; this text would pass %d", u.id, u.pending, u.s.h.deps.Limits.MaxPendingText)
	}
	if u.firstText.IsZero() && text != "" {
		u.firstText = time.Now()
	}
	u.pending += len(text)
	if len(u.text)+len(text) <= maxHeardText {
		u.text = append(u.text, text...)
	}
	if u.immediate {
		// Passed on as it came: the provider's own buffer joins the
		// pieces (spaces are the client's).
		if text != "" {
			u.seg.consumed += len(text)
			u.cut(segment{text: text, end: u.seg.consumed, partial: true})
		}
		u.signal()
		return nil
	}
	var out [4]string
	for i, seg := range u.seg.write(text, out[:0]) {
		u.cut(segment{text: seg, end: u.seg.ends[i]})
	}
	u.signal()
	return nil
}

// cut queues a segment for the worker (reader side, u.mu held).
func (u *utterance) cut(seg segment) {
	if u.firstCut.IsZero() {
		u.firstCut = time.Now()
	}
	u.queue = append(u.queue, seg)
}

// restSegment queues what the segmenter holds, flushed (u.mu held).
func (u *utterance) restSegment() {
	if rest := u.seg.rest(); rest != "" {
		u.cut(segment{text: rest, flush: true, end: u.seg.ends[0]})
	} else if u.immediate {
		// Nothing held: the flush goes to the provider on its own.
		u.cut(segment{flush: true, end: u.seg.consumed, partial: true})
	}
}

// flush queues what is buffered, even mid-sentence.
func (u *utterance) flush() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return problem.New(problem.UnknownContext, "context %q takes no more text: close was sent", u.id)
	}
	u.restSegment()
	u.signal()
	return nil
}

// closeInput ends the input: the rest is spoken, then done.
func (u *utterance) closeInput() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return problem.New(problem.UnknownContext, "context %q was already closed", u.id)
	}
	if !u.immediate {
		u.restSegment()
	}
	u.closed = true
	u.signal()
	return nil
}

// cancelByClient stops the context at once: queued audio is dropped by
// the writer from now on, and the provider call is cancelled.
func (u *utterance) cancelByClient() {
	u.cancelled.Store(true)
	u.cancel(errCancelled)
}

func (u *utterance) signal() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// dropped reports whether the context's pending audio is to be dropped.
func (u *utterance) dropped() bool { return u.cancelled.Load() }

// audioSent notes that an audio frame reached the socket (writer side).
func (u *utterance) audioSent() {
	u.firstAudio.CompareAndSwap(0, time.Now().UnixNano())
}

// noteHeard records what frame f told the client (writer side): its
// audio's length, its word timings, the end of a segment whose audio has
// all been written.
func (u *utterance) noteHeard(f *frame) {
	h := &u.heard
	h.audioSec += f.audioSec
	h.words = append(h.words, f.words...)
	h.textEnd = max(h.textEnd, f.textEnd)
}

// heardNow says what the client has been sent of the context (writer
// side, when its cancelled or done message is written: every audio frame
// of the context queued before it has been written or dropped by then).
func (u *utterance) heardNow() heardJSON {
	h := &u.heard
	u.mu.Lock()
	text := string(u.text)
	u.mu.Unlock()
	return heardOf(text, h.words, h.audioSec, h.textEnd)
}

// The worker's side.

// run speaks the context until its input ends, it fails or it is
// cancelled, then reports done and writes its log row.
func (u *utterance) run() {
	defer u.s.wg.Done()
	if u.release != nil {
		defer u.release()
	}
	defer u.s.h.contexts.Add(-1)
	defer u.stop()
	var input *speech.Input
	if u.live.InputStreaming() {
		u.streamTimings = u.live.StreamTimings()
		input = u.live.OpenInput(u.ctx, u.emit)
	}
	err := u.speak(&input)
	if input != nil {
		if err == nil {
			input.Close()
			if err = input.Wait(); err != nil {
				// The stream failed with all the input sent: what was
				// not heard may still go to a fallback.
				var moved bool
				if moved, err = u.inputFailover(err); moved && err == nil {
					input = nil // spoken through the fallback's calls from here
					err = u.speak(&input)
				}
			}
		} else {
			input.Cancel()
			_ = input.Wait()
		}
	}
	u.finish(err)
}

// speak hands each segment, moderated, to the provider: to its input
// stream while *input is set, else through its ordinary calls. A failed
// input stream moves the context to a fallback when it may
// (inputFailover): *input is then nil.
func (u *utterance) speak(input **speech.Input) error {
	var ended <-chan struct{}
	in := *input
	if in != nil {
		ended = in.Done()
	}
	for {
		seg, ok, err := u.next(ended)
		if err == nil && !ok && in != nil && isClosed(ended) {
			// The stream ended before its input did: its error decides.
			if werr := in.Wait(); werr != nil {
				moved, ferr := u.inputFailover(werr)
				if !moved {
					return ferr
				}
				*input, in, ended = nil, nil, nil
				if ferr != nil {
					return ferr
				}
				continue
			}
		}
		if err != nil || !ok {
			return err
		}
		if in == nil && seg.partial {
			// Pieces of the immediate aggregation left after a failover:
			// the fallback speaks them as one text.
			seg = u.joinQueued(seg)
		}
		if strings.TrimSpace(seg.text) != "" {
			if err := u.live.Moderate(u.ctx, seg.text); err != nil {
				return err
			}
		}
		if u.firstSent.IsZero() {
			u.firstSent = time.Now()
		}
		u.segments++
		switch {
		case in != nil && seg.partial:
			u.sent = append(u.sent, sentSegment{seg: seg})
			err = in.SendPartial(u.ctx, u.live, seg.text, seg.flush)
		case in != nil:
			u.sent = append(u.sent, sentSegment{seg: seg, words: u.live.InputWords(seg.text)})
			err = in.Send(u.ctx, u.live, seg.text, seg.flush)
		default:
			err = u.render(seg)
			if err == nil {
				// Every audio frame of the segment is queued: once the
				// writer reaches this mark, the segment was all sent.
				err = u.queue1(frame{droppable: true, textEnd: seg.end})
			}
		}
		if err != nil && in != nil && u.ctx.Err() == nil && isClosed(ended) {
			// The stream failed under this segment (Send returns the
			// stream's error): the segment was not handed over.
			u.sent = u.sent[:len(u.sent)-1]
			u.live.Unspend(seg.text)
			u.sent = append(u.sent, sentSegment{seg: seg, words: -1})
			moved, ferr := u.inputFailover(err)
			if !moved {
				return ferr
			}
			*input, in, ended = nil, nil, nil
			if ferr != nil {
				return ferr
			}
			continue
		}
		if err != nil {
			return err
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// inputFailover moves a context whose input stream failed with err to
// the next target of the voice's fallback chain, as render does for a
// segment, when the failure is one a fallback may meet and the context
// has sent less than its failover window of audio. The text not heard is
// spoken again by the fallback, after a failover message: from the first
// word whose audio was not sent (replay.go: by the stream's word timings,
// or estimated from the audio's length where it has none), the segments
// after it, and the segment the stream failed under; later segments go to
// the fallback too (moved true, *input nil for the caller). Pieces of the
// immediate aggregation are replayed joined, as one text. Otherwise the
// context ends with err.
func (u *utterance) inputFailover(err error) (moved bool, _ error) {
	if u.ctx.Err() != nil || u.queuedSec >= u.failoverWindow.Seconds() {
		return false, err
	}
	// The text the stream got, joined as the provider got it (a space
	// after each whole segment), and how many words its timings count
	// over it when it is the client's own words.
	var all strings.Builder
	starts := make([]int, len(u.sent))
	inputWords := 0
	for i, s := range u.sent {
		starts[i] = all.Len()
		if s.words < 0 {
			continue // not handed over
		}
		all.WriteString(s.seg.text)
		switch {
		case s.seg.partial:
			// The provider may speak the pieces apart ("fir", "st"):
			// its words are found in the text, not counted.
			inputWords = -1
		default:
			all.WriteByte(' ')
			if s.words != countFields(s.seg.text) {
				inputWords = -1
			}
		}
	}
	text := all.String()
	if inputWords == 0 {
		inputWords = countFields(text)
	}
	sec := u.queuedSec
	cut := 0
	if sec > 0 {
		cut = replayCut(text, inputWords, u.streamTimings, heardWords(u.timings, sec), sec, u.charsPerSecond())
	}
	name := u.live.Provider() + "/" + u.live.Model()
	if !u.live.Failover(u.ctx, err) {
		return false, err
	}
	u.mu.Lock()
	u.immediate = false // the fallback takes no partial input: clauses from here
	u.mu.Unlock()
	var replay []segment
	for i, s := range u.sent {
		seg := s.seg
		switch {
		case s.words < 0:
			// Not handed over: not spent either (speak unspent it).
		case cut >= starts[i]+len(seg.text):
			continue // heard
		case cut > starts[i]:
			seg.text = rest(seg.text, cut-starts[i])
			u.live.Unspend(seg.text) // spoken again, and billed, by the fallback
		default:
			u.live.Unspend(seg.text)
		}
		if n := len(replay); n > 0 && seg.partial && replay[n-1].partial {
			// Pieces as the client sent them: one text for the fallback.
			replay[n-1].text += seg.text
			replay[n-1].end, replay[n-1].flush = seg.end, replay[n-1].flush || seg.flush
			continue
		}
		replay = append(replay, seg)
	}
	u.sent = nil
	texts := make([]string, 0, len(replay))
	for _, seg := range replay {
		if t := strings.TrimSpace(seg.text); t != "" {
			texts = append(texts, t)
		}
	}
	_, pe := errorFor(u.id, err, "")
	if qerr := u.queue1(frame{kind: websocket.TextMessage, data: mustJSON(failoverMessage{Type: "failover", ContextID: u.id, From: name,
		Provider: u.live.Provider(), Model: u.live.Model(), Voice: u.live.Voice(), Reason: string(pe.Code), ReplayedText: strings.Join(texts, " ")})}); qerr != nil {
		return true, qerr
	}
	for _, seg := range replay {
		if strings.TrimSpace(seg.text) == "" {
			continue
		}
		if rerr := u.render(seg); rerr != nil {
			return true, rerr
		}
		if qerr := u.queue1(frame{droppable: true, textEnd: seg.end}); qerr != nil {
			return true, qerr
		}
	}
	return true, nil
}

// charsPerSecond is the speaking rate a replay's cut is estimated with
// when the audio has no word timings: assumedCharsPerSecond at the
// context's speed.
func (u *utterance) charsPerSecond() float64 {
	return assumedCharsPerSecond * u.live.Speed()
}

// joinQueued joins seg, a piece of the immediate aggregation, with the
// pieces queued after it, as the client sent them (worker side).
func (u *utterance) joinQueued(seg segment) segment {
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.queue) > 0 && u.queue[0].partial {
		next := u.queue[0]
		u.queue = u.queue[1:]
		u.pending = max(0, u.pending-len(next.text))
		seg.text += next.text
		seg.end, seg.flush = next.end, seg.flush || next.flush
	}
	if len(u.queue) == 0 {
		u.queue = nil
	}
	return seg
}

// defaultFailoverWindow is how much audio a context may have sent and
// still move to a fallback, unless its start says otherwise.
const defaultFailoverWindow = 3 * time.Second

// render speaks one segment through the provider's ordinary calls. When
// the provider fails and the context has sent less than its failover
// window of audio, the text not yet heard is spoken by the next target of
// the voice's fallback chain, and the client is told: the whole segment
// when none of its audio was sent (the segments before it were all sent),
// else the segment from the first word whose audio was not (replay.go:
// by its word timings, or estimated from its audio's length, a word
// early). Past the window, the failure ends the context: a listener
// would hear the voice change mid-utterance.
func (u *utterance) render(seg segment) error {
	for {
		u.segAudio = 0
		// Only this segment's timings can place a replay: those of the
		// segments before (or of an input stream failed over from) go.
		u.timings = u.timings[:0]
		startSec, base := u.queuedSec, u.live.AudioSeconds()
		err := u.live.Render(u.ctx, seg.text, u.emit)
		if err == nil || u.ctx.Err() != nil || u.queuedSec >= u.failoverWindow.Seconds() {
			return err
		}
		cut := 0
		if u.segAudio > 0 {
			// The segment's timings are on the timeline of the audio Live
			// rendered (base is where the segment starts on it); without a
			// known byte rate (MP3 of unknown bitrate) sec is 0 and the
			// whole segment is replayed. (InputWords counts with the failed
			// model's tags, before Failover changes it.)
			words := u.timings
			sec := u.queuedSec - startSec
			cut = replayCut(seg.text, u.live.InputWords(seg.text), len(words) > 0, heardWords(words, base+sec), sec, u.charsPerSecond())
		}
		from := u.live.Provider() + "/" + u.live.Model()
		if !u.live.Failover(u.ctx, err) {
			return err
		}
		seg.text = rest(seg.text, cut)
		u.live.Unspend(seg.text) // spoken again, and billed, by the fallback
		_, pe := errorFor(u.id, err, "")
		if qerr := u.queue1(frame{kind: websocket.TextMessage, data: mustJSON(failoverMessage{Type: "failover", ContextID: u.id, From: from,
			Provider: u.live.Provider(), Model: u.live.Model(), Voice: u.live.Voice(), Reason: string(pe.Code), ReplayedText: seg.text})}); qerr != nil {
			return qerr
		}
		if strings.TrimSpace(seg.text) == "" {
			return nil // all of it was heard
		}
	}
}

// next waits for the next segment; ok is false once the input is closed
// and spoken. ended, when closed, means the provider's stream is over.
func (u *utterance) next(ended <-chan struct{}) (segment, bool, error) {
	for {
		u.mu.Lock()
		if len(u.queue) > 0 {
			seg := u.queue[0]
			u.queue = u.queue[1:]
			u.pending = max(0, u.pending-len(seg.text))
			if len(u.queue) == 0 {
				u.queue = nil // let the backing array go
			}
			u.mu.Unlock()
			return seg, true, nil
		}
		closed := u.closed
		u.mu.Unlock()
		if closed {
			return segment{}, false, nil
		}
		select {
		case <-u.wake:
		case <-u.ctx.Done():
			return segment{}, false, u.ctx.Err()
		case <-ended:
			// The stream's own error is returned by Wait.
			return segment{}, false, nil
		}
	}
}

// emit queues one event of the provider for the client; it waits while
// the socket's queue is full (the provider is paused meanwhile) and fails
// once the context is over.
func (u *utterance) emit(e sdk.StreamEvent) error {
	u.timings = append(u.timings, e.Words...)
	if len(e.Words) > 0 && !u.live.Timestamps() {
		// Timings the gateway asked for itself, to say what was heard:
		// noted by the writer, not sent.
		if err := u.queue1(frame{droppable: true, words: e.Words}); err != nil {
			return err
		}
		e.Words = nil
	}
	if e.Warning != "" {
		if err := u.queue1(frame{kind: websocket.TextMessage, droppable: true,
			data: mustJSON(warningMessage{Type: "warning", ContextID: u.id, Message: e.Warning})}); err != nil {
			return err
		}
	}
	if len(e.Words) > 0 {
		if err := u.queue1(frame{kind: websocket.TextMessage, droppable: true, words: e.Words,
			data: mustJSON(timestampsMessage{Type: "timestamps", ContextID: u.id, Words: wordsJSON(e.Words)})}); err != nil {
			return err
		}
	}
	if len(e.Audio) == 0 {
		return nil
	}
	if u.mediaType == "" && e.MediaType != "" {
		u.mediaType = e.MediaType
		if want := u.live.MediaType(); want != "" && want != e.MediaType {
			u.s.log.Warn("realtime audio is not what started announced", zap.String("announced", want), zap.String("got", e.MediaType))
		}
		u.bytesPerSec = u.live.BytesPerSecond(e.MediaType)
	}
	f := frame{u: u, kind: websocket.BinaryMessage, droppable: true, audio: true}
	if u.bytesPerSec > 0 {
		f.audioSec = float64(len(e.Audio)) / u.bytesPerSec
	}
	u.segAudio += len(e.Audio)
	u.queuedSec += f.audioSec
	if u.hash != nil {
		u.hash.Write(e.Audio)
	}
	if u.base64 {
		f.kind, f.data = websocket.TextMessage, base64Frame(u.id, e.Audio)
	} else {
		f.data = binaryFrame(u.id, e.Audio)
	}
	if err := u.queue1(f); err != nil {
		return err
	}
	u.firstQueued.CompareAndSwap(0, time.Now().UnixNano())
	return nil
}

func (u *utterance) queue1(f frame) error {
	f.u = u
	select {
	case u.s.out <- f:
		return nil
	case <-u.ctx.Done():
		return u.ctx.Err()
	}
}

// finish sends the context's last messages and writes its log row.
func (u *utterance) finish(err error) {
	reason := reasonCompleted
	var pe *problem.Error
	status := 200
	sendErr := false
	socketCause := context.Cause(u.s.ctx)
	switch {
	case u.cancelled.Load():
		reason = reasonCancelled
		pe = problem.New(problem.Cancelled, "the client cancelled the context")
		err = nil
	case socketCause != nil:
		reason = reasonCancelled
		pe = socketProblem(socketCause)
		err = nil
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && u.ctx.Err() != nil:
		err = problem.New(problem.RequestTimeout, "the context did not finish within the gateway's request timeout (server.request_timeout)")
		fallthrough
	default:
		sendErr = true
		reason = reasonError
		if _, ok := blockedError(err); ok {
			reason = reasonBlocked
		}
	}
	var msg errorMessage
	if sendErr {
		msg, pe = errorFor(u.id, err, u.live.Provider())
		status = statusOf(err, pe)
		if status >= 500 && reason == reasonError {
			u.s.log.Warn("realtime context failed", zap.String("request_id", u.reqID), zap.String("code", string(pe.Code)), zap.Error(err))
		}
	} else if pe != nil {
		status = pe.Status()
		if pe.Code != problem.Unavailable {
			status = problem.StatusOf(problem.Cancelled) // 499: the client ended it
		}
	}
	// The row: billed for what reached the provider, unless the provider
	// failed before any audio.
	providerFailed := sendErr && reason == reasonError
	row := u.live.Row(providerFailed)
	row.RequestID, row.TS, row.Status = u.reqID, u.started, status
	if pe != nil {
		row.ErrorCode, row.ErrorDetail = string(pe.Code), pe.Detail
	}
	if reason == reasonBlocked {
		row.CreditsUsed = u.live.Row(false).CreditsUsed
	}
	// What was reserved from the budgets for this context and not spent
	// goes back (a provider failure before any audio costs nothing).
	u.live.Settle(context.WithoutCancel(u.s.ctx), speech.Amount(&row))
	row.LatencyMS = time.Since(u.started).Milliseconds()
	done := doneMessage{Type: "done", ContextID: u.id, Reason: reason, Characters: row.CharCount, Credits: row.CreditsUsed,
		AudioSeconds: round3(u.live.AudioSeconds())}
	fa := u.firstAudio.Load()
	if fa == 0 {
		fa = u.firstQueued.Load()
	}
	if fa != 0 {
		first := u.firstText
		if first.IsZero() {
			first = u.started
		}
		d := max(0, time.Unix(0, fa).Sub(first))
		ms := d.Milliseconds()
		if obs := u.s.h.deps.FirstAudio; obs != nil {
			obs(u.live.Provider(), u.live.MetricModel(), d)
		}
		done.TimeToFirstAudioMs = &ms
		row.TimeToFirstAudioMS = ms
	}
	metrics := u.turnMetrics(fa)
	if metrics.TextWaitMs != nil {
		row.TextWaitMS = *metrics.TextWaitMs
	}
	// The row is queued before done goes out, so a client that reads
	// done and then the logs finds it; the id is free again from here.
	if p := u.s.h.deps.Provenance; p != nil && u.hash != nil {
		row.OrgID, row.KeyID, row.ParentRequestID, row.Path = u.s.org, u.s.keyID, u.s.id, Path
		p(row, u.hash, u.mediaType, reason == reasonCompleted)
	} else {
		u.s.record(row)
	}
	u.s.mu.Lock()
	delete(u.s.contexts, u.id)
	u.s.mu.Unlock()
	if reason == reasonCompleted {
		// Everything was spoken: all of the input was heard once the
		// writer is past its last audio.
		u.mu.Lock()
		end := u.seg.consumed
		u.mu.Unlock()
		u.s.send(frame{u: u, textEnd: end})
	}
	// Metrics first: the error, when there is one, is just before done.
	u.s.send(frame{kind: websocket.TextMessage, data: mustJSON(metrics)})
	if sendErr {
		u.s.send(frame{kind: websocket.TextMessage, data: mustJSON(msg)})
	}
	// What was heard is read by the writer when it reaches these
	// messages: every audio frame of the context before them has been
	// written or dropped by then.
	if reason == reasonCancelled && u.cancelled.Load() {
		u.s.send(frame{kind: websocket.TextMessage, build: func() []byte {
			return mustJSON(cancelledMessage{Type: "cancelled", ContextID: u.id, heardJSON: u.heardNow()})
		}})
	}
	u.s.send(frame{kind: websocket.TextMessage, build: func() []byte {
		done.heardJSON = u.heardNow()
		return mustJSON(done)
	}})
}

// turnMetrics is the context's metrics message, and observes its timings
// (Deps.Turn). fa is when its first audio was written (unix nanos, 0:
// none).
func (u *utterance) turnMetrics(fa int64) metricsMessage {
	m := metricsMessage{Type: "metrics", ContextID: u.id, Aggregation: u.aggregation, Segments: u.segments}
	u.mu.Lock()
	firstText, firstCut := u.firstText, u.firstCut
	u.mu.Unlock()
	var t TurnTiming
	if !firstText.IsZero() && !firstCut.IsZero() {
		t.TextWait = max(0, firstCut.Sub(firstText))
		ms := t.TextWait.Milliseconds()
		m.TextWaitMs = &ms
	}
	if fa != 0 && !firstText.IsZero() {
		t.FirstAudio = max(0, time.Unix(0, fa).Sub(firstText))
		ms := t.FirstAudio.Milliseconds()
		m.TimeToFirstAudioMs = &ms
	}
	if fa != 0 && !firstCut.IsZero() {
		d := max(0, time.Unix(0, fa).Sub(firstCut))
		ms := d.Milliseconds()
		m.FirstSegmentToAudioMs = &ms
	}
	if obs := u.s.h.deps.Turn; obs != nil && (m.TextWaitMs != nil || m.TimeToFirstAudioMs != nil) {
		t.HasTextWait, t.HasFirstAudio = m.TextWaitMs != nil, m.TimeToFirstAudioMs != nil
		obs(u.live.Provider(), u.live.MetricModel(), t)
	}
	return m
}

// socketProblem is the log problem of contexts ended with their socket.
func socketProblem(cause error) *problem.Error {
	switch {
	case errors.Is(cause, errShutdown):
		return problem.New(problem.Unavailable, "the gateway shut down during the context")
	case errors.Is(cause, errClientTooSlow):
		return &problem.Error{Code: "client_too_slow", Detail: "the client did not read the audio in time; the socket was closed"}
	}
	return &problem.Error{Code: "client_disconnected", Detail: "the client closed the socket during the context"}
}

func blockedError(err error) (*moderation.BlockedError, bool) {
	var be *moderation.BlockedError
	ok := errors.As(err, &be)
	return be, ok
}
