package speech

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// sttRate is the rate clips are sent to the speech-to-text provider at:
// what recognizers listen at, and a third of a 48 kHz upload.
const sttRate = 16000

// minTranscriptMatch is the share of the text's words the transcript must
// contain for its times to be used: below it the clip does not say the
// text (or the recognizer did not hear it), and timestamps would be
// guesses.
const minTranscriptMatch = 0.6

// transcribePiece times the words of one rendered piece with the
// speech-to-text provider: the clip goes as 16 kHz WAV with the text as
// the prompt, and the transcript's words are mapped onto the text's own
// (see mapTranscript).
func (s *Service) transcribePiece(ctx context.Context, j *Job, clip *audio.Clip, text string) (timed, error) {
	p := s.transcriber()
	stt := p.Plugin.(sdk.Transcriber)
	creds, err := s.creds.For(ctx, j.Org, p.ID)
	if err != nil {
		return timed{warning: fmt.Sprintf("No word timestamps: the speech-to-text provider %s cannot be used by this organization (%s).", p.ID, err.Error())}, nil
	}
	low, err := audio.Resample(clip, sttRate)
	if err != nil {
		return timed{}, err
	}
	wav, mediaType, err := audio.Encode(low, audio.Output{Format: audio.FormatWAV, SampleRate: sttRate})
	if err != nil {
		return timed{}, err
	}
	lang := optionLanguage(j.Options)
	if lang == "" {
		lang = guessLanguage(text)
	}
	lang, _, _ = strings.Cut(strings.ToLower(lang), "-")
	if utf8.RuneCountInString(lang) != 2 {
		lang = "" // the provider detects it
	}
	var tr *sdk.Transcript
	err = s.callProvider(ctx, p, s.align.STTModel, "transcribe", func(ctx context.Context) error {
		var err error
		tr, err = stt.Transcribe(ctx, &sdk.TranscribeRequest{Model: s.align.STTModel, Audio: wav, MediaType: mediaType, Language: lang, Prompt: text, Credentials: creds})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return timed{}, ctx.Err()
		}
		return timed{warning: fmt.Sprintf("No word timestamps: the speech-to-text provider %s failed (%s).", p.ID, sdk.AsError(err).Message)}, nil
	}
	words, ok := mapTranscript(spokenWords(text), tr.Words, clip.Seconds())
	if !ok {
		return timed{warning: fmt.Sprintf("No word timestamps: the transcript of the audio from %s does not match the text; they are left out rather than guessed.", j.name())}, nil
	}
	return timed{words: words}, nil
}

// mapTranscript gives each of the text's words the time of the
// transcript word(s) it matches. The two are aligned like a diff (edit
// distance over normalized words: case, punctuation and hyphens ignored;
// one text word may match two transcript words or the reverse, as in
// "well-known" and "well known"). Text words the transcript lacks share
// the time between their matched neighbours in proportion to their
// length. ok is false when fewer than minTranscriptMatch of the words
// matched.
//
// Cost: the edit table is words × transcript words; a piece is at most a
// model's text limit, a few hundred words.
func mapTranscript(text []string, tr []sdk.WordTimestamp, seconds float64) (out []sdk.WordTimestamp, ok bool) {
	n, m := len(text), len(tr)
	if n == 0 {
		return []sdk.WordTimestamp{}, true
	}
	a := make([]string, n)
	for i, w := range text {
		a[i] = normalizeWord(w)
	}
	b := make([]string, m)
	for j, w := range tr {
		b[j] = normalizeWord(w.Text)
	}
	// cost[i][j] is the cheapest alignment of a[i:] with b[j:].
	const (
		stepMatch = iota
		stepSkipText
		stepSkipTranscript
		stepSubstitute
		stepOneTwo // a[i] = b[j]+b[j+1]
		stepTwoOne // a[i]+a[i+1] = b[j]
	)
	cost := make([][]int32, n+1)
	move := make([][]uint8, n+1)
	for i := range cost {
		cost[i] = make([]int32, m+1)
		move[i] = make([]uint8, m+1)
	}
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			if i == n && j == m {
				continue
			}
			best, mv := int32(1<<30), uint8(0)
			try := func(c int32, k uint8) {
				if c < best {
					best, mv = c, k
				}
			}
			if i < n && j < m {
				if a[i] == b[j] {
					try(cost[i+1][j+1], stepMatch)
				} else {
					try(cost[i+1][j+1]+2, stepSubstitute)
				}
			}
			if i < n && j+1 < m && a[i] == b[j]+b[j+1] {
				try(cost[i+1][j+2], stepOneTwo)
			}
			if i+1 < n && j < m && a[i]+a[i+1] == b[j] {
				try(cost[i+2][j+1], stepTwoOne)
			}
			if i < n {
				try(cost[i+1][j]+1, stepSkipText)
			}
			if j < m {
				try(cost[i][j+1]+1, stepSkipTranscript)
			}
			cost[i][j], move[i][j] = best, mv
		}
	}
	out = make([]sdk.WordTimestamp, n)
	timed := make([]bool, n)
	matched := 0
	for i, j := 0, 0; i < n || j < m; {
		switch move[i][j] {
		case stepMatch, stepSubstitute:
			out[i] = sdk.WordTimestamp{Text: text[i], Start: tr[j].Start, End: tr[j].End}
			timed[i] = true
			if move[i][j] == stepMatch {
				matched++
			}
			i, j = i+1, j+1
		case stepOneTwo:
			out[i] = sdk.WordTimestamp{Text: text[i], Start: tr[j].Start, End: tr[j+1].End}
			timed[i] = true
			matched++
			i, j = i+1, j+2
		case stepTwoOne:
			mid := (tr[j].Start + tr[j].End) / 2
			out[i] = sdk.WordTimestamp{Text: text[i], Start: tr[j].Start, End: mid}
			out[i+1] = sdk.WordTimestamp{Text: text[i+1], Start: mid, End: tr[j].End}
			timed[i], timed[i+1] = true, true
			matched += 2
			i, j = i+2, j+1
		case stepSkipText:
			out[i].Text = text[i]
			i++
		default:
			j++
		}
	}
	if float64(matched) < minTranscriptMatch*float64(n) {
		return nil, false
	}
	fillGaps(out, timed, seconds)
	return out, true
}

// fillGaps times the words the transcript lacks: each run of them shares
// the time between the neighbours' end and start in proportion to the
// words' lengths. Then every word is ordered and inside the clip.
func fillGaps(out []sdk.WordTimestamp, timed []bool, seconds float64) {
	for i := 0; i < len(out); {
		if timed[i] {
			i++
			continue
		}
		k := i
		for k < len(out) && !timed[k] {
			k++
		}
		from, to := 0.0, seconds
		if i > 0 {
			from = out[i-1].End
		}
		if k < len(out) {
			to = out[k].Start
		}
		to = max(to, from)
		total := 0
		for x := i; x < k; x++ {
			total += utf8.RuneCountInString(out[x].Text)
		}
		at, done := from, 0
		for x := i; x < k; x++ {
			done += utf8.RuneCountInString(out[x].Text)
			next := from + (to-from)*float64(done)/float64(max(total, 1))
			out[x].Start, out[x].End = at, next
			at = next
		}
		i = k
	}
	prev := 0.0
	for i := range out {
		out[i].Start = min(max(out[i].Start, prev), seconds)
		out[i].End = min(max(out[i].End, out[i].Start), seconds)
		prev = out[i].End
	}
}

// normalizeWord is a word as compared with a transcript: lower case,
// letters and digits only.
func normalizeWord(w string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(w) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}
