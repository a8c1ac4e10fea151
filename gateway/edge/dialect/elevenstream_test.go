package dialect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestAppendTimestampChunks(t *testing.T) {
	a := &Alignment{
		Characters: []string{"a", "b", " ", "c", "d"},
		Starts:     []float64{0, 0.3, 0.6, 1.1, 1.9},
		Ends:       []float64{0.3, 0.6, 1.1, 1.9, 2.2},
	}
	clip := make([]byte, 2001) // 2 s at 1,000 bytes a second, and an odd byte
	for i := range clip {
		clip[i] = byte(i)
	}
	tests := []struct {
		name       string
		clip       []byte
		seconds    float64
		frame      int
		wantChunks int
		wantChars  []string // each chunk's characters joined
	}{
		{"half-second pieces", clip, 2.0005, 2, 5, []string{"ab", " ", "c", "d", ""}},
		{"a clip shorter than a piece", clip[:400], 0.4, 2, 1, []string{"ab cd"}},
		{"an empty clip", nil, 0, 1, 1, []string{"ab cd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := AppendTimestampChunks(nil, tt.clip, tt.seconds, tt.frame, a)
			if !bytes.HasSuffix(out, []byte("\n")) {
				t.Fatalf("not newline-ended: %q", out)
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(lines) != tt.wantChunks {
				t.Fatalf("%d objects, want %d: %s", len(lines), tt.wantChunks, out)
			}
			var joined []byte
			for i, l := range lines {
				var c struct {
					AudioBase64         *string    `json:"audio_base64"`
					Alignment           *Alignment `json:"alignment"`
					NormalizedAlignment *Alignment `json:"normalized_alignment"`
				}
				if err := json.Unmarshal([]byte(l), &c); err != nil || c.AudioBase64 == nil {
					t.Fatalf("line %d %q: %v", i, l, err)
				}
				b, _ := base64.StdEncoding.DecodeString(*c.AudioBase64)
				if i < len(lines)-1 && len(b)%tt.frame != 0 {
					t.Errorf("piece %d is %d bytes, not whole %d-byte frames", i, len(b), tt.frame)
				}
				joined = append(joined, b...)
				got := ""
				if c.Alignment != nil {
					got = strings.Join(c.Alignment.Characters, "")
					if len(c.Alignment.Starts) != len(c.Alignment.Characters) || len(c.Alignment.Ends) != len(c.Alignment.Characters) {
						t.Errorf("piece %d: %+v", i, c.Alignment)
					}
					if !slices.Equal(c.NormalizedAlignment.Characters, c.Alignment.Characters) {
						t.Errorf("piece %d: normalized %+v", i, c.NormalizedAlignment)
					}
				} else if c.NormalizedAlignment != nil || !strings.Contains(l, `"alignment":null`) {
					t.Errorf("piece %d without characters: %s", i, l)
				}
				if got != tt.wantChars[i] {
					t.Errorf("piece %d has %q, want %q", i, got, tt.wantChars[i])
				}
			}
			if !bytes.Equal(joined, tt.clip) {
				t.Errorf("the pieces join into %d bytes, not the clip's %d", len(joined), len(tt.clip))
			}
		})
	}
}
