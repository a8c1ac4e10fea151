package dialect

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

func TestParseOutputFormat(t *testing.T) {
	tests := []struct {
		in   string
		want OutputFormat
		ok   bool
	}{
		{"", OutputFormat{"mp3", 44100, 128}, true},
		{"mp3_22050_32", OutputFormat{"mp3", 22050, 32}, true},
		{"pcm_16000", OutputFormat{"pcm", 16000, 0}, true},
		{"ulaw_8000", OutputFormat{"ulaw", 8000, 0}, true},
		{"alaw_8000", OutputFormat{"alaw", 8000, 0}, true},
		{"opus_48000_64", OutputFormat{"opus", 48000, 64}, true},
		{"wav_44100", OutputFormat{"wav", 44100, 0}, true},
		{"ogg_44100", OutputFormat{}, false},
		{"mp3", OutputFormat{}, false},
		{"pcm_x", OutputFormat{}, false},
		{"mp3_44100_0", OutputFormat{}, false},
		{"mp3_44100_128_1", OutputFormat{}, false},
	}
	for _, tt := range tests {
		got, err := ParseOutputFormat(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseOutputFormat(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestCharacterAlignment(t *testing.T) {
	words := []sdk.WordTimestamp{{Text: "Two", Start: 0.1, End: 0.4}, {Text: "missing", Start: 0.4, End: 0.5}, {Text: "words", Start: 0.6, End: 1.1}}
	a := CharacterAlignment("Two wörds, words.", words)
	if strings.Join(a.Characters, "") != "Two wörds, words." || len(a.Starts) != len(a.Characters) {
		t.Fatalf("%+v", a)
	}
	// "Two" spans 0.1 to 0.4; the unmatched "wörds, " lies in the gap;
	// "words" spans 0.6 to 1.1; the final "." sits at the end.
	if a.Starts[0] != 0.1 || a.Ends[2] != 0.4 || a.Starts[11] != 0.6 || a.Ends[15] != 1.1 || a.Starts[16] != 1.1 {
		t.Errorf("starts %v ends %v", a.Starts, a.Ends)
	}
	for i := range a.Starts {
		if a.Ends[i] < a.Starts[i] || (i > 0 && a.Starts[i] < a.Starts[i-1]) {
			t.Fatalf("not monotonic at %d: %v %v", i, a.Starts, a.Ends)
		}
	}
	if e := CharacterAlignment("", nil); len(e.Characters) != 0 {
		t.Errorf("empty: %+v", e)
	}
}

// An ElevenLabs body without model_id asks for ElevenLabs' default model,
// so an alias of that model moves it like one that names it; a voice
// alias's own model still wins.
func TestElevenLabsDefaultModel(t *testing.T) {
	onESpeak := NewAliases(AliasSet{
		Models: map[string]string{ElevenLabsDefaultModel: "espeak/espeak-ng"},
		Voices: map[string]VoiceAlias{"george": {Voice: "en-gb"}, "narrator": {Model: "espeak/espeak-ng", Voice: "en"}},
	}, nil)
	isProvider := func(p string) bool { return p == "espeak" || p == ElevenLabsHome }
	tests := []struct {
		name          string
		aliases       *Aliases
		model, voice  string
		want, wantVox string
	}{
		{"no model_id, no alias: ElevenLabs' default", nil, "", "JBFqnCBsd6RMkjVDRZzb", "elevenlabs/eleven_multilingual_v2", "JBFqnCBsd6RMkjVDRZzb"},
		{"no model_id, the default aliased", onESpeak, "", "george", "espeak/espeak-ng", "en-gb"},
		{"model_id given", onESpeak, "eleven_flash_v2_5", "george", "elevenlabs/eleven_flash_v2_5", "en-gb"},
		{"a voice alias's model wins over the default", onESpeak, "", "narrator", "espeak/espeak-ng", "en"},
		{"a voice alias's model wins over model_id", onESpeak, "eleven_flash_v2_5", "narrator", "espeak/espeak-ng", "en"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "Hello."
			body := ElevenLabsSpeech{Text: &text, ModelID: tt.model}
			req, err := body.Speech("acme", tt.voice, "", speech.DeliverClip, tt.aliases, isProvider)
			if err != nil {
				t.Fatal(err)
			}
			if req.Model != tt.want || req.Voice != tt.wantVox {
				t.Errorf("model %q voice %q, want %q %q", req.Model, req.Voice, tt.want, tt.wantVox)
			}
		})
	}
}
