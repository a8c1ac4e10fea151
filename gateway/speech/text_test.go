package speech

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

func TestSplitText(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"fits", "One sentence.", 100, []string{"One sentence."}},
		{"sentences", "First one here. Second one here. Third one here.", 35, []string{"First one here. Second one here.", "Third one here."}},
		{"clause before word", "A long clause, then more words follow here", 30, []string{"A long clause,", "then more words follow here"}},
		{"words", "alpha beta gamma delta epsilon", 12, []string{"alpha beta", "gamma delta", "epsilon"}},
		{"paragraph first", "Para one is here.\n\nPara two. Still two.", 36, []string{"Para one is here.", "Para two. Still two."}},
		{"no spaces", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"tag kept whole", "word [laughs loudly] word", 16, []string{"word", "[laughs loudly]", "word"}},
		{"cjk stop", "今日は晴れです。明日は雨です。", 9, []string{"今日は晴れです。", "明日は雨です。"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitText(tt.text, tt.limit)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("splitText(%q, %d) = %q, want %q", tt.text, tt.limit, got, tt.want)
			}
		})
	}
}

// TestSplitTextKeepsEverything: pieces respect the limit, and together
// they are the text, whitespace at the cuts aside.
func TestSplitTextKeepsEverything(t *testing.T) {
	text := strings.Repeat("The quick brown fox, which was fast, jumps over the lazy dog. ", 300)
	for _, limit := range []int{50, 333, 4096} {
		pieces := splitText(text, limit)
		for _, p := range pieces {
			if n := utf8.RuneCountInString(p); n > limit || n == 0 {
				t.Fatalf("limit %d: piece of %d characters", limit, n)
			}
		}
		if strings.Join(strings.Fields(strings.Join(pieces, " ")), " ") != strings.Join(strings.Fields(text), " ") {
			t.Fatalf("limit %d: pieces lose text", limit)
		}
		if limit >= 333 {
			for _, p := range pieces[:len(pieces)-1] {
				if !strings.HasSuffix(p, ".") {
					t.Errorf("limit %d: piece %q does not end a sentence", limit, p[len(p)-20:])
				}
			}
		}
	}
}

func TestApplyTags(t *testing.T) {
	none := &sdk.Model{}
	some := &sdk.Model{AudioTags: []string{"laughter"}}
	all := &sdk.Model{AudioTags: []string{sdk.AnyAudioTag}}
	tests := []struct {
		name     string
		text     string
		model    *sdk.Model
		want     string
		warnings []string
	}{
		{"no tags", "Hello there.", none, "Hello there.", nil},
		{"removed", "Well [laughs] that is funny.", none, "Well that is funny.", []string{"Audio tag [laughs] is not supported by p/m and was removed."}},
		{"at start", "[whispers] Keep it quiet.", none, "Keep it quiet.", []string{"Audio tag [whispers] is not supported by p/m and was removed."}},
		{"before punctuation", "Really [sighs], again?", none, "Really, again?", []string{"Audio tag [sighs] is not supported by p/m and was removed."}},
		{"one of two kept", "Ha [laughter] and [sighs] so.", some, "Ha [laughter] and so.", []string{"Audio tag [sighs] is not supported by p/m and was removed."}},
		{"case-insensitive", "Ha [Laughter] so.", some, "Ha [Laughter] so.", nil},
		{"all kept", "[excited] Yes [laughs]!", all, "[excited] Yes [laughs]!", nil},
		{"lines kept", "One. [pause]\nTwo.", none, "One.\nTwo.", []string{"Audio tag [pause] is not supported by p/m and was removed."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := applyTags(tt.text, tt.model, func() string { return "p/m" })
			if got != tt.want || strings.Join(warnings, "|") != strings.Join(tt.warnings, "|") {
				t.Errorf("applyTags(%q) = %q, %q; want %q, %q", tt.text, got, warnings, tt.want, tt.warnings)
			}
		})
	}
}

// TestTagsAreNotWords: pronunciation mapping, caption and transcript word
// lists never count a tag as a word.
func TestTagsAreNotWords(t *testing.T) {
	text := "[laughs] Hello [whispers] world"
	var got []string
	for _, w := range words(text) {
		got = append(got, text[w.start:w.end])
	}
	if strings.Join(got, " ") != "Hello world" {
		t.Errorf("words = %q", got)
	}
	if w := spokenWords(withoutTags(text)); strings.Join(w, " ") != "Hello world" {
		t.Errorf("spokenWords = %q", w)
	}
	ts := dropTagWords([]sdk.WordTimestamp{{Text: "[laughs]"}, {Text: "Hello"}, {Text: "[whispers]"}, {Text: "world"}})
	if len(ts) != 2 || ts[0].Text != "Hello" {
		t.Errorf("dropTagWords = %+v", ts)
	}
}

func TestMapTranscript(t *testing.T) {
	at := func(ws ...string) []sdk.WordTimestamp {
		out := make([]sdk.WordTimestamp, len(ws))
		for i, w := range ws {
			out[i] = sdk.WordTimestamp{Text: w, Start: float64(i), End: float64(i) + 0.8}
		}
		return out
	}
	tests := []struct {
		name   string
		text   []string
		tr     []sdk.WordTimestamp
		starts []float64
		ok     bool
	}{
		{"exact", []string{"Hello,", "World!"}, at("hello", "world"), []float64{0, 1}, true},
		{"split word", []string{"a", "well-known", "fact"}, at("a", "well", "known", "fact"), []float64{0, 1, 3}, true},
		{"merged words", []string{"any", "one", "here"}, at("anyone", "here"), []float64{0, 0.4, 1}, true},
		{"misheard word", []string{"the", "cat", "sat", "down"}, at("the", "hat", "sat", "down"), []float64{0, 1, 2, 3}, true},
		{"word missing", []string{"one", "two", "three", "four", "five"}, at("one", "two", "four", "five"), []float64{0, 1, 1.8, 2, 3}, true},
		{"extra word", []string{"one", "two"}, at("um", "one", "two"), []float64{1, 2}, true},
		{"another text", []string{"alpha", "beta", "gamma", "delta"}, at("one", "two", "three", "four"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := mapTranscript(tt.text, tt.tr, 10)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, got)
			}
			if !ok {
				return
			}
			if len(got) != len(tt.text) {
				t.Fatalf("%d words, want %d", len(got), len(tt.text))
			}
			for i, w := range got {
				if w.Text != tt.text[i] || math.Abs(w.Start-tt.starts[i]) > 1e-9 {
					t.Errorf("word %d = %+v, want %q at %g", i, w, tt.text[i], tt.starts[i])
				}
				if i > 0 && w.Start < got[i-1].End {
					t.Errorf("word %d starts before the previous ends: %+v", i, got)
				}
			}
		})
	}
}

func TestCaptions(t *testing.T) {
	text := "Hello, world. This is a caption test that runs long enough to need a second line, and then some more words to split it."
	var ts []sdk.WordTimestamp
	for i, w := range spokenWords(text) {
		ts = append(ts, sdk.WordTimestamp{Text: w, Start: 0.4 * float64(i), End: 0.4*float64(i) + 0.3})
	}
	srt := Captions(CaptionsSRT, text, ts)
	want := "1\n00:00:00,000 --> 00:00:00,700\nHello, world.\n\n" +
		"2\n00:00:00,800 --> 00:00:06,300\nThis is a caption test that runs long\nenough to need a second line,\n\n" +
		"3\n00:00:06,400 --> 00:00:09,500\nand then some more words to split it.\n\n"
	if srt != want {
		t.Errorf("srt:\n%s\nwant:\n%s", srt, want)
	}
	vtt := Captions(CaptionsVTT, "Fish & <chips>", []sdk.WordTimestamp{{Text: "Fish", End: 0.5}, {Text: "chips", Start: 0.6, End: 3.25}})
	if vtt != "WEBVTT\n\n1\n00:00:00.000 --> 00:00:03.250\nFish &amp; &lt;chips&gt;\n\n" {
		t.Errorf("vtt:\n%q", vtt)
	}
	if c := captionClock(3723.25, "."); c != "01:02:03.250" {
		t.Errorf("clock %s", c)
	}
	// A cue never lasts more than 7 s, and never spans two turns.
	long := make([]sdk.WordTimestamp, 20)
	for i := range long {
		long[i] = sdk.WordTimestamp{Text: "word", Start: float64(i), End: float64(i) + 0.5}
	}
	for _, block := range strings.Split(strings.TrimSpace(Captions(CaptionsSRT, strings.Repeat("word ", 20), long)), "\n\n") {
		var a, b [4]int
		line := strings.Split(block, "\n")[1]
		if _, err := fmtSscanClock(line, &a, &b); err != nil {
			t.Fatal(err)
		}
		if secs(b)-secs(a) > 7 {
			t.Errorf("cue %q lasts more than 7 s", line)
		}
	}
	conv := ConversationCaptions(CaptionsSRT, []string{"Hi there", "Hello again"}, []ConversationTimestamp{
		{Text: "Hi", End: 0.2}, {Text: "there", Start: 0.3, End: 0.5, TurnIndex: 0},
		{Text: "Hello", Start: 1, End: 1.2, TurnIndex: 1}, {Text: "again", Start: 1.3, End: 1.5, TurnIndex: 1},
	})
	if strings.Count(conv, "-->") != 2 || !strings.Contains(conv, "\nHi there\n") || !strings.Contains(conv, "\nHello again\n") {
		t.Errorf("conversation captions:\n%s", conv)
	}
}

func secs(c [4]int) float64 {
	return float64(c[0]*3600+c[1]*60+c[2]) + float64(c[3])/1000
}

// TestJoinHasNoClicks joins clips that end and start mid-wave, at full
// swing: without the fades the join would step from +0.9 to -0.9.
func TestJoinHasNoClicks(t *testing.T) {
	const rate = 24000
	mk := func(phase float64) *audio.Clip {
		c := &audio.Clip{Rate: rate, Samples: make([]float32, rate/10)}
		for i := range c.Samples {
			c.Samples[i] = float32(0.9 * math.Sin(2*math.Pi*440*float64(i)/rate+phase))
		}
		return c
	}
	clips := []*audio.Clip{mk(0), mk(math.Pi / 2), mk(math.Pi)}
	joined, offsets, err := joinPieces(clips)
	if err != nil {
		t.Fatal(err)
	}
	maxStep := 2 * math.Sin(math.Pi*440/rate) * 0.9 // the sine's own largest step
	for k, off := range offsets[1:] {
		j := int(math.Round(off * rate))
		for i := j - 200; i < j+200; i++ {
			if step := math.Abs(float64(joined.Samples[i] - joined.Samples[i-1])); step > maxStep*1.01 {
				t.Fatalf("join %d: step %.3f at sample %d (the sine's own steps are at most %.3f)", k+1, step, i, maxStep)
			}
		}
	}
	// And the same join of 16-bit PCM, as streams do it.
	pcm := make([]byte, 2*rate/10)
	for i := range rate / 10 {
		v := int16(0.9 * 32767 * math.Sin(2*math.Pi*440*float64(i)/rate+math.Pi/2))
		pcm[2*i], pcm[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	fadePCM(pcm, rate/200, true)
	fadePCM(pcm, rate/200, false)
	first, last := int16(uint16(pcm[0])|uint16(pcm[1])<<8), int16(uint16(pcm[len(pcm)-2])|uint16(pcm[len(pcm)-1])<<8)
	if first != 0 || math.Abs(float64(last)) > 300 {
		t.Errorf("faded PCM edges %d and %d, want about 0", first, last)
	}
}

func TestGuessLanguage(t *testing.T) {
	for text, want := range map[string]string{
		"The cat is on the mat and it is happy.":             "en",
		"Der Hund und die Katze sind nicht im Haus.":         "de",
		"Le chat et le chien ne sont pas dans la maison.":    "fr",
		"El perro y el gato no están en la casa con los dos": "es",
		"Привет, как дела?":                                  "ru",
		"こんにちは、元気ですか。":                                       "ja",
		"你好，你好吗？":                                            "cmn",
		"Xyz qwv.":                                           "en",
	} {
		if got := guessLanguage(text); got != want {
			t.Errorf("guessLanguage(%q) = %s, want %s", text, got, want)
		}
	}
}

// fmtSscanClock reads an SRT cue's time line into a and b.
func fmtSscanClock(line string, a, b *[4]int) (int, error) {
	return fmt.Sscanf(line, "%d:%d:%d,%d --> %d:%d:%d,%d", &a[0], &a[1], &a[2], &a[3], &b[0], &b[1], &b[2], &b[3])
}
