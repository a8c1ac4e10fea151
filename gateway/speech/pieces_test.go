package speech_test

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// longText is three sentences; at the limit of 40 characters a piece
// each.
const longText = "The first sentence is here. The second one follows it. And a third closes the text."

var longPieces = []string{"The first sentence is here.", "The second one follows it.", "And a third closes the text."}

// pieceAudio renders text as the kit renders it for the pipeline, in PCM
// at its native rate (16 kHz), straight from the kit (no call is
// recorded): what one piece of a joined clip or stream holds.
func pieceAudio(t *testing.T, p *pipeline, text string) []byte {
	t.Helper()
	resp, err := p.providers["testkit"].Provider.Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: "test", Voice: "alpha", Text: text, Format: sdk.FormatPCM})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Audio
}

// pieceSeconds is how long pieceAudio's clip of text lasts.
func pieceSeconds(t *testing.T, p *pipeline, text string) float64 {
	return float64(len(pieceAudio(t, p, text))/2) / 16000
}

// TestLongText: a text longer than the model takes in one call is cut
// into pieces at the model's limit, at sentence ends; each piece is one
// provider call; the pieces are joined into one clip (a conversion, for
// the reason "join") whose length is theirs together, and each piece's
// word timestamps are offset by the piece's start.
func TestLongText(t *testing.T) {
	p := newPipeline(t, setup{maxTextChars: 40})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", longText), speech.DeliverTimestamps)
	wantCode(t, err, "")
	got := p.texts("testkit")
	slices.Sort(got) // the pieces render concurrently
	want := slices.Sorted(slices.Values(longPieces))
	if !slices.Equal(got, want) {
		t.Fatalf("the provider was asked for %q, want the pieces %q", got, want)
	}
	for _, c := range p.calls("testkit") {
		if !c.Timestamps || c.Format != sdk.FormatPCM {
			t.Errorf("piece %q asked in %q with timestamps %v; want PCM (to join) with the model's timestamps", c.Text, c.Format, c.Timestamps)
		}
	}
	res := out.Result
	// Each piece starts where the ones before it end.
	var starts []float64
	total := 0.0
	for _, piece := range longPieces {
		starts = append(starts, total)
		total += pieceSeconds(t, p, piece)
	}
	if len(res.Pieces) != len(starts) {
		t.Fatalf("pieces start at %v, want %v", res.Pieces, starts)
	}
	for k := range starts {
		if math.Abs(res.Pieces[k]-starts[k]) > 1e-3 {
			t.Errorf("piece %d starts at %.4f s, want %.4f s", k, res.Pieces[k], starts[k])
		}
	}
	clip := decode(t, res)
	if math.Abs(float64(len(clip.Samples))/float64(clip.Rate)-total) > 1e-3 {
		t.Errorf("the joined clip lasts %.4f s, want the pieces' %.4f s", float64(len(clip.Samples))/float64(clip.Rate), total)
	}
	// The pieces end to end, in order, each as the provider rendered it
	// but for the fades at the joins (5 ms, 80 samples, a side).
	const fade = 80
	at := 0
	for k, piece := range longPieces {
		want, err := audio.Decode(pieceAudio(t, p, piece), "audio/pcm;rate=16000")
		if err != nil {
			t.Fatal(err)
		}
		n := len(want.Samples)
		if at+n > len(clip.Samples) {
			t.Fatalf("the clip ends inside piece %d", k)
		}
		for i := fade; i < n-fade; i++ {
			if math.Abs(float64(clip.Samples[at+i]-want.Samples[i])) > 1e-4 {
				t.Errorf("piece %d differs from the provider's rendering at its sample %d", k, i)
				break
			}
		}
		at += n
	}
	// Every word in order, each piece's first word at its piece's start
	// (the kit starts a clip with its first word).
	words := strings.Fields(longText)
	if len(res.Timestamps) != len(words) {
		t.Fatalf("%d timestamps, want one for each of the %d words", len(res.Timestamps), len(words))
	}
	w := 0
	for k, piece := range longPieces {
		if ts := res.Timestamps[w]; ts.Text != strings.Fields(piece)[0] || math.Abs(ts.Start-res.Pieces[k]) > 1e-3 {
			t.Errorf("piece %d's first word %+v, want %q at %.4f s", k, ts, strings.Fields(piece)[0], res.Pieces[k])
		}
		w += len(strings.Fields(piece))
	}
	for i, ts := range res.Timestamps {
		if ts.Text != words[i] || ts.End <= ts.Start || (i > 0 && ts.Start < res.Timestamps[i-1].End) {
			t.Errorf("timestamp %d: %+v after %+v; want %q, in order", i, ts, res.Timestamps[max(i-1, 0)], words[i])
		}
	}
	// The pieces were joined: a conversion, and the row says so.
	c := res.Conversion
	if c == nil || c.Reason != speech.ReasonJoin || c.String() != "pcm_16000->wav_16000" || out.Row.Transcoded != c.String() {
		t.Errorf("conversion %+v, row %q; want pcm_16000->wav_16000 for the reason join", c, out.Row.Transcoded)
	}
	if out.Row.CreditsUsed != len(longText) {
		t.Errorf("%d credits, want one a character of the whole text (%d)", out.Row.CreditsUsed, len(longText))
	}
}

// TestLongTextPieces: where texts are cut, by the kind of boundary the
// limit leaves room for, and that a text within the limit is one call
// whose bytes pass through.
func TestLongTextPieces(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		pieces []string
	}{
		{"within the limit", "Short enough for one call.", []string{"Short enough for one call."}},
		{"at sentences", longText, longPieces},
		{"at clauses", "One clause, then another clause; and the last clause",
			[]string{"One clause, then another clause;", "and the last clause"}},
		{"at spaces", "words without any punctuation at all that run on and on",
			[]string{"words without any punctuation at all", "that run on and on"}},
		{"inside a word", strings.Repeat("x", 50), []string{strings.Repeat("x", 40), strings.Repeat("x", 10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{maxTextChars: 40})
			out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", tt.text), speech.DeliverClip)
			wantCode(t, err, "")
			got := p.texts("testkit")
			slices.Sort(got)
			if want := slices.Sorted(slices.Values(tt.pieces)); !slices.Equal(got, want) {
				t.Errorf("the provider was asked for %q, want %q", got, want)
			}
			if len(out.Result.Pieces) != len(tt.pieces) {
				t.Errorf("%d piece starts, want %d", len(out.Result.Pieces), len(tt.pieces))
			}
			if c := out.Result.Conversion; (len(tt.pieces) == 1) != (c == nil) {
				t.Errorf("conversion %v for %d pieces; only joined pieces are converted", c, len(tt.pieces))
			}
		})
	}
}

// TestLongTextStream: a long text's stream plays its pieces in order,
// the first streamed live and the rest rendered ahead; the client gets
// the pieces' audio end to end.
func TestLongTextStream(t *testing.T) {
	p := newPipeline(t, setup{maxTextChars: 40})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", longText), speech.DeliverStream)
	wantCode(t, err, "")
	data := drain(t, out.Stream)
	got := p.texts("testkit")
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(longPieces)); !slices.Equal(got, want) {
		t.Fatalf("the provider was asked for %q, want the pieces %q", got, want)
	}
	if streamed := p.streamed("testkit"); !slices.Equal(streamed, longPieces[:1]) {
		t.Errorf("streamed %q, want the first piece alone (the others are rendered ahead as clips)", streamed)
	}
	if mt := out.Stream.MediaType(); mt != "audio/pcm;rate=16000" {
		t.Fatalf("media type %q, want the model's PCM", mt)
	}
	// The pieces end to end, in order: each piece's bytes where it
	// belongs, but for the fades at the joins (5 ms, 160 bytes, a side).
	const fade = 160
	at := 0
	for k, piece := range longPieces {
		want := pieceAudio(t, p, piece)
		if at+len(want) > len(data) {
			t.Fatalf("the stream ends at byte %d, inside piece %d (%d to %d)", len(data), k, at, at+len(want))
		}
		if !bytes.Equal(data[at+fade:at+len(want)-fade], want[fade:len(want)-fade]) {
			t.Errorf("piece %d is not at bytes %d to %d of the stream", k, at, at+len(want))
		}
		at += len(want)
	}
	if at != len(data) {
		t.Errorf("the stream has %d bytes, want the pieces' %d", len(data), at)
	}
}

// TestTextTooLong: past limits.max_text_chars a text is refused before
// any provider is called, whatever the model's limit.
func TestTextTooLong(t *testing.T) {
	p := newPipeline(t, setup{maxTextChars: 40})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", strings.Repeat("word ", 4001)), speech.DeliverClip)
	wantCode(t, err, problem.TextTooLong)
	if n := len(p.calls("testkit")); n != 0 || out.Charge != nil {
		t.Errorf("%d provider calls, charge %v; want none", n, out.Charge)
	}
}
