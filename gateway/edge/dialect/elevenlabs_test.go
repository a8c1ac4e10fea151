package dialect

import (
	"strings"
	"testing"

	"encoding/json"
	"errors"
	"reflect"

	"github.com/voxgate/voxgate/gateway/problem"
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

// TestElevenLabsSpeechPassesOn: the fields only ElevenLabs understands,
// from the body and from the query, reach the ElevenLabs plugin as its
// providerOptions, under the names ElevenLabs gives them.
func TestElevenLabsSpeechPassesOn(t *testing.T) {
	var body ElevenLabsSpeech
	if err := json.Unmarshal([]byte(`{"text": "Hi.", "model_id": "eleven_flash_v2_5", "seed": -1,
		"previous_text": "Before.", "next_text": "After.",
		"previous_request_ids": ["r1", "r2"], "next_request_ids": ["r4"],
		"voice_settings": {"stability": 0.4, "speed": 1.1}}`), &body); err != nil {
		t.Fatal(err)
	}
	if err := body.SetQuery("false", "3"); err != nil {
		t.Fatal(err)
	}
	req, err := body.Speech("org", "voice", "", speech.DeliverClip, &Aliases{}, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(req.ProviderOptions, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"seed": -1.0, "previous_text": "Before.", "next_text": "After.",
		"previous_request_ids": []any{"r1", "r2"}, "next_request_ids": []any{"r4"},
		"voice_settings": map[string]any{"stability": 0.4},
		"enable_logging": false, "optimize_streaming_latency": 3.0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("providerOptions %s\nwant %v", req.ProviderOptions, want)
	}
	if req.Speed == nil || *req.Speed != 1.1 || req.OptionsFor != ElevenLabsHome {
		t.Errorf("speed %v, options for %q", req.Speed, req.OptionsFor)
	}
	// Without the query parameters nothing is added.
	var plain ElevenLabsSpeech
	_ = json.Unmarshal([]byte(`{"text": "Hi."}`), &plain)
	if err := plain.SetQuery("", ""); err != nil {
		t.Fatal(err)
	}
	if req, err := plain.Speech("org", "voice", "", speech.DeliverClip, &Aliases{}, func(string) bool { return true }); err != nil || req.ProviderOptions != nil {
		t.Errorf("options %s, %v", req.ProviderOptions, err)
	}
	for _, q := range [][2]string{{"no", ""}, {"", "fast"}} {
		err := plain.SetQuery(q[0], q[1])
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.ValidationFailed || len(pe.Validation) != 1 {
			t.Errorf("%q: %v", q, err)
		}
	}
}

// TestElevenLabsErrorNamesTheOption: a providerOptions field the plugin
// refused is named as ElevenLabs names it.
func TestElevenLabsErrorNamesTheOption(t *testing.T) {
	pe := problem.Validation(problem.Field("elevenlabs: providerOptions field seed must be between 0 and 4294967295, got -1", "providerOptions", "seed"))
	if got := NewElevenLabsError(pe).Detail; got.Param != "seed" || got.Status != "validation_failed" {
		t.Errorf("%+v", got)
	}
	pe = problem.Validation(problem.Field("must be between 0.7 and 1.2", "providerOptions", "voice_settings", "speed"))
	if got := NewElevenLabsError(pe).Detail; got.Param != "voice_settings.speed" || got.Message != "voice_settings.speed: must be between 0.7 and 1.2" {
		t.Errorf("%+v", got)
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
