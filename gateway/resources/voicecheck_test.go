package resources

import (
	"slices"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

func TestCloseVoices(t *testing.T) {
	espeak := []sdk.Voice{
		{ID: "en", Name: "English (Great Britain)"}, {ID: "en-gb", Name: "English (Great Britain)"},
		{ID: "en-us", Name: "English (America)"}, {ID: "en-029", Name: "English (Caribbean)"},
		{ID: "en-gb-x-rp", Name: "English (Received Pronunciation)"}, {ID: "eo", Name: "Esperanto"},
		{ID: "es", Name: "Spanish (Spain)"}, {ID: "de", Name: "German"}, {ID: "fr-fr", Name: "French (France)"},
		{ID: "fr-be", Name: "French (Belgium)"},
	}
	eleven := []sdk.Voice{{ID: "21m00Tcm4TlvDq8ikWAM", Name: "Rachel"}, {ID: "EXAVITQu4vr4xnSDxMaL", Name: "Sarah"}}
	tests := []struct {
		name   string
		id     string
		voices []sdk.Voice
		want   []string
	}{
		{"another case", "EN-GB", espeak, []string{"en-gb", "en-gb-x-rp", "en"}},
		{"typo", "en_gb", espeak, []string{"en-gb", "en"}},
		{"a tag short", "fr", espeak, []string{"fr-be", "fr-fr"}},
		{"a tag too many", "de-de", espeak, []string{"de"}},
		{"more after a separator", "en-gb+f3", espeak, []string{"en-gb", "en"}},
		{"a name for the id", "rachel", eleven, []string{"21m00Tcm4TlvDq8ikWAM"}},
		{"a typo in a name", "Sara", eleven, []string{"EXAVITQu4vr4xnSDxMaL"}},
		{"nothing close", "klingon", espeak, []string{}},
		{"a long tail", "es-such-a-voice", espeak, []string{}},
		{"no voices", "en", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := closeVoices(tt.id, tt.voices, 5); !slices.Equal(got, tt.want) {
				t.Errorf("closeVoices(%q) = %q, want %q", tt.id, got, tt.want)
			}
		})
	}
	// At most n, the best first.
	if got := closeVoices("En", espeak, 3); !slices.Equal(got, []string{"en", "en-gb", "en-us"}) {
		t.Errorf("closeVoices(En, 3) = %q", got)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"", "", 2, 0},
		{"en-gb", "en-gb", 2, 0},
		{"en_gb", "en-gb", 2, 1},
		{"kitten", "sitting", 5, 3},
		{"grüße", "grusse", 3, 3},
		{"kitten", "sitting", 2, 3}, // past the limit: limit+1
		{"a", "abcdefgh", 2, 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}
