package phonetic

import (
	"os/exec"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		alphabet, s string
		ok          bool
	}{
		{IPA, "ˈtoʊmɑːtoʊ", true},
		{IPA, "ŋwɪn", true},
		{IPA, "t͡ʃɜːtʃ", true},
		{IPA, "nuː jɔːk", true},
		{IPA, "l̩", true},
		{IPA, "tomato!", false},
		{IPA, "<b>", false},
		{IPA, "", false},
		{IPA, "  ", false},
		{IPA, "3", false},
		{CMU, "T AH0 M EY1 T OW2", true},
		{CMU, "t ah0 m ey1 t ow2", true},
		{CMU, "W IH1 N", true},
		{CMU, "T1 AH0", false},
		{CMU, "AH3", false},
		{CMU, "XX", false},
		{CMU, "", false},
		{CMU, "ˈtoʊ", false},
		{"xsampa", "t@", false},
	} {
		err := Check(c.alphabet, c.s)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, %q) = %v, want ok %v", c.alphabet, c.s, err, c.ok)
		}
	}
}

func TestToIPA(t *testing.T) {
	for in, want := range map[string]string{
		"T AH0 M EY1 T OW2": "təmˈeɪtˌoʊ",
		"N UW1 Y AO1 R K":   "nˈujˈɔɹk",
		"B ER1 D ER0":       "bˈɝdɚ",
	} {
		if got := ToIPA(CMU, in); got != want {
			t.Errorf("ToIPA(cmu, %q) = %q, want %q", in, got, want)
		}
	}
	if got := ToIPA(IPA, "ŋwɪn"); got != "ŋwɪn" {
		t.Errorf("ToIPA(ipa) changed the text: %q", got)
	}
}

func TestSegments(t *testing.T) {
	for in, want := range map[string]string{
		"kɑɹˈtiʒə":    "k|ɑ|ɹ|ˈ|t|i|ʒ|ə",
		"ˈdʒæmbəlaɪə": "ˈ|dʒ|æ|m|b|ə|l|aɪ|ə",
		"t͡ʃiːz":      "t͡ʃ|iː|z",
		"nuː jɔːk":    "n|uː|j|ɔː|k",
	} {
		if got := strings.Join(Segments(in), "|"); got != want {
			t.Errorf("Segments(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestESpeakTableAgainstESpeak checks the IPA to eSpeak table with
// espeak-ng itself: the IPA espeak-ng gives for English words, converted
// to eSpeak phonemes and spoken as [[...]] phoneme input, must come back
// as the same IPA. A wrong table entry turns into another phoneme and the
// IPA differs.
func TestESpeakTableAgainstESpeak(t *testing.T) {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Fatalf("espeak-ng is not installed (make build installs it): %v", err)
	}
	words := strings.Fields("computer thought father caught about nurse judge church measure thing this sing " +
		"yes wet hat ship boy now go day my tomato water little button here there poor car door bird happy " +
		"azure cheese jam loch uh-oh")
	for _, voice := range []string{"en-us", "en-gb"} {
		for _, w := range words {
			ipa := espeakIPA(t, voice, w)
			es, missing, ok := ToESpeak(ipa)
			if !ok {
				t.Errorf("%s %q: IPA %q has symbols without an eSpeak phoneme: %q", voice, w, ipa, missing)
				continue
			}
			if back := espeakIPA(t, voice, "[["+es+"]]"); back != ipa {
				t.Errorf("%s %q: IPA %q -> eSpeak [[%s]] -> IPA %q", voice, w, ipa, es, back)
			}
		}
	}
}

func espeakIPA(t *testing.T, voice, text string) string {
	t.Helper()
	out, err := exec.Command("espeak-ng", "-v", voice, "-q", "--ipa", text).Output()
	if err != nil {
		t.Fatalf("espeak-ng %q: %v", text, err)
	}
	return strings.TrimSpace(string(out))
}
