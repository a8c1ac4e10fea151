package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// timestampEvent is the data of one server-sent event of
// /v1/tts/stream/with-timestamp.
type timestampEvent struct {
	AudioBase64 string `json:"audio_base64"`
	Content     string `json:"content"`
	Alignment   *struct {
		AudioDuration float64   `json:"audio_duration"`
		Segments      []segment `json:"segments"`
	} `json:"alignment"`
	ChunkSeq    int     `json:"chunk_seq"`
	ChunkOffset float64 `json:"chunk_audio_offset_sec"`
	// An error reported inside the stream, in the API's error shape.
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// segment is one timed piece of text of an alignment: a word.
type segment struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// maxEvent bounds one event: a base64 audio chunk is tens of KB.
const maxEvent = 16 << 20

// readTimestampEvents reads the event stream of
// /v1/tts/stream/with-timestamp: the audio of every event, joined in
// order, and the word segments on the clip's timeline. The API sends, per
// text chunk (chunk_seq), cumulative alignment snapshots where the latest
// replaces the earlier ones, with times relative to the chunk's start
// (chunk_audio_offset_sec); the last snapshot of each chunk is kept and
// shifted by its offset.
//
// Hand-written rather than a library: the plugin imports only the sdk and
// the standard library, and the SSE subset the API uses (data lines,
// blank-line separators) is a few lines of bufio.
func readTimestampEvents(ctx context.Context, r io.Reader) ([]byte, []segment, error) {
	type snapshot struct {
		offset   float64
		segments []segment
	}
	var (
		audio     bytes.Buffer
		snapshots = map[int]snapshot{}
		data      []byte
		eventType string
	)
	dispatch := func() error {
		defer func() { data, eventType = data[:0], "" }()
		if len(data) == 0 {
			return nil
		}
		var ev timestampEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "fish-audio: an event is not JSON"}
		}
		if eventType == "error" || ev.Status >= 400 {
			status := ev.Status
			if status < 400 {
				status = http.StatusInternalServerError
			}
			return upstream.ErrorFromStatus(status, providerID, "", ev.Message, 0)
		}
		if ev.AudioBase64 != "" {
			chunk, err := base64.StdEncoding.DecodeString(ev.AudioBase64)
			if err != nil {
				return &sdk.Error{Kind: sdk.KindUpstream, Message: "fish-audio: an event's audio_base64 is not base64"}
			}
			audio.Write(chunk)
		}
		if ev.Alignment != nil {
			snapshots[ev.ChunkSeq] = snapshot{offset: ev.ChunkOffset, segments: ev.Alignment.Segments}
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if err := dispatch(); err != nil {
				return nil, nil, err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		case bytes.HasPrefix(line, []byte("event:")):
			eventType = strings.TrimSpace(string(line[len("event:"):]))
		}
		// "id:", "retry:" and ":" comments carry nothing we use.
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "fish-audio: an event exceeds 16 MiB"}
		}
		return nil, nil, upstream.TransportError(ctx, providerID, err)
	}
	if err := dispatch(); err != nil {
		return nil, nil, err
	}
	seqs := make([]int, 0, len(snapshots))
	for seq := range snapshots {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	var segments []segment
	for _, seq := range seqs {
		s := snapshots[seq]
		for _, g := range s.segments {
			segments = append(segments, segment{Text: g.Text, Start: g.Start + s.offset, End: g.End + s.offset})
		}
	}
	return audio.Bytes(), segments, nil
}

// matchWords turns the API's segments into word timestamps that read like
// the caller's text. The segments are words stripped of punctuation ("dog"
// for "dog.", "Ive" for "I've"); each is matched, letters and digits
// compared without case, against the next few words of text, and takes
// that word's spelling when it matches. A segment that matches nothing
// (a number the API spelled out, say) keeps its own text; a word the API
// did not time is left out.
func matchWords(text string, segments []segment) []sdk.WordTimestamp {
	words := strings.Fields(text)
	out := make([]sdk.WordTimestamp, 0, len(segments))
	next := 0 // the first word of text not yet matched
	for _, s := range segments {
		key := fold(s.Text)
		if key == "" {
			continue
		}
		ts := sdk.WordTimestamp{Text: strings.TrimSpace(s.Text), Start: s.Start, End: max(s.End, s.Start)}
		// Look a few words ahead: the API may skip a word that is only
		// punctuation ("-") or an emotion tag.
		for k := next; k < min(next+4, len(words)); k++ {
			if fold(words[k]) == key {
				ts.Text, next = words[k], k+1
				break
			}
		}
		out = append(out, ts)
	}
	return out
}

// fold keeps the letters and digits of s, lower-cased: what a word and
// its segment have in common.
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
