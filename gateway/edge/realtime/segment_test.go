package realtime

import (
	"reflect"
	"strings"
	"testing"
)

func TestSegmenter(t *testing.T) {
	long := strings.Repeat("word ", 70) // 350 characters, no punctuation
	tests := []struct {
		name   string
		chunks []string
		want   []string // segments from write, in order
		rest   string
	}{
		{"one sentence waits for what follows", []string{"Hello there."}, nil, "Hello there."},
		{"a space ends it", []string{"Hello there. "}, []string{"Hello there."}, ""},
		{"tokens", []string{"Hel", "lo", " there", ".", " How", " are", " you", "?"}, []string{"Hello there."}, "How are you?"},
		{"several at once", []string{"One. Two! Three? Four"}, []string{"One.", "Two!", "Three?"}, "Four"},
		{"decimal", []string{"It costs 3.", "5 euros. Ok"}, []string{"It costs 3.5 euros."}, "Ok"},
		{"abbreviation", []string{"Dr. Smith and J. R. R. Tolkien met, e.g. at home. Then"}, []string{"Dr. Smith and J. R. R. Tolkien met, e.g. at home."}, "Then"},
		{"closing quote", []string{`He said "go." She went. `}, []string{`He said "go."`, "She went."}, ""},
		{"ellipsis", []string{"Well… maybe "}, []string{"Well…"}, "maybe"},
		{"short first clause waits", []string{"Well, then "}, nil, "Well, then"},
		{"first clause past 40", []string{"When the meeting finally started at noon, everyone was tired "}, []string{"When the meeting finally started at noon,"}, "everyone was tired"},
		{"later clause needs 120", []string{"First. ", "Then something, and more "}, []string{"First."}, "Then something, and more"},
		{"run-on text is cut at a space", []string{long}, []string{strings.TrimSpace(long[:300])}, strings.TrimSpace(long[300:])},
		{"CJK", []string{"你好。今天好吗？我"}, []string{"你好。", "今天好吗？"}, "我"},
		{"whitespace only", []string{"   \n "}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s segmenter
			var got []string
			for _, c := range tt.chunks {
				got = s.write(c, got)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("segments %q, want %q", got, tt.want)
			}
			if r := s.rest(); r != tt.rest {
				t.Errorf("rest %q, want %q", r, tt.rest)
			}
			if s.buffered() != 0 {
				t.Errorf("buffer not empty after rest")
			}
		})
	}
}

func TestSegmenterClauseMode(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []string
		rest   string
	}{
		{"short clause waits", []string{"Well, then "}, nil, "Well, then"},
		{"first clause past the minimum", []string{"When it started, everyone, at last, sat "}, []string{"When it started,", "everyone, at last,"}, "sat"},
		{"sentences still cut", []string{"Yes. No "}, []string{"Yes."}, "No"},
		{"tokens", []string{"Thank", " you for", " waiting", ",", " really", "."}, []string{"Thank you for waiting,"}, "really."},
		{"a short clause is not cut later", strings.SplitAfter("Well, you know, I think that, on balance, it works. ", " "),
			[]string{"Well, you know,", "I think that, on balance,", "it works."}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := segmenter{clause: true}
			var got []string
			for _, c := range tt.chunks {
				got = s.write(c, got)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("segments %q, want %q", got, tt.want)
			}
			if r := s.rest(); r != tt.rest {
				t.Errorf("rest %q, want %q", r, tt.rest)
			}
		})
	}
}

// TestSegmenterEnds checks that each segment's end is where its text ends
// in the whole input, which is what says what was heard.
func TestSegmenterEnds(t *testing.T) {
	var s segmenter
	input := ""
	for _, c := range []string{"One two. ", "Three", " four! Five"} {
		input += c
		for i, seg := range s.write(c, nil) {
			if end := s.ends[i]; !strings.HasSuffix(strings.TrimSpace(input[:end]), seg) {
				t.Errorf("segment %q ends at %d: %q", seg, end, input[:end])
			}
		}
	}
	if r := s.rest(); r != "Five" || s.ends[0] != len(input) {
		t.Errorf("rest %q ends at %v, want %d", r, s.ends, len(input))
	}
}

func TestSegmenterBoundsItsBuffer(t *testing.T) {
	var s segmenter
	for range 1000 {
		s.write("x", nil) // one word without end
		if s.buffered() > maxSegment*utf8Max {
			t.Fatalf("buffer grew to %d bytes", s.buffered())
		}
	}
}

const utf8Max = 4
