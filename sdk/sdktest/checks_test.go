package sdktest

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

func goodDescription() *sdk.Description {
	return &sdk.Description{
		ID: "acme", Name: "Acme", DefaultModel: "m1",
		Models: []sdk.Model{
			{ID: "m1", OutputFormats: []string{sdk.FormatMP3, sdk.FormatPCM}, SampleRates: []int{24000}, NativeSampleRate: 24000, MaxTextChars: 4096},
			{ID: "m2", OutputFormats: []string{"webm"}},
		},
	}
}

func TestValidateDescription(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(d *sdk.Description)
		custom  []string
		wantErr string // "" means valid
	}{
		{"good", func(*sdk.Description) {}, []string{"webm"}, ""},
		{"custom format not declared", func(*sdk.Description) {}, nil, `unknown output format "webm"`},
		{"no id", func(d *sdk.Description) { d.ID = "" }, []string{"webm"}, "provider ID is empty"},
		{"slash in id", func(d *sdk.Description) { d.ID = "a/b" }, []string{"webm"}, "contains '/'"},
		{"no models", func(d *sdk.Description) { d.Models = nil; d.DefaultModel = "" }, nil, "no models"},
		{"default not a model", func(d *sdk.Description) { d.DefaultModel = "m3" }, []string{"webm"}, `default model "m3"`},
		{"empty model id", func(d *sdk.Description) { d.Models[1].ID = "" }, []string{"webm"}, "ID is empty"},
		{"duplicate model", func(d *sdk.Description) { d.Models[1].ID = "m1" }, []string{"webm"}, "duplicate ID"},
		{"no formats", func(d *sdk.Description) { d.Models[0].OutputFormats = nil }, []string{"webm"}, "no output formats"},
		{"negative limit", func(d *sdk.Description) { d.Models[0].MaxTextChars = -1 }, []string{"webm"}, "MaxTextChars -1"},
		{"zero rate", func(d *sdk.Description) { d.Models[0].SampleRates = []int{0} }, []string{"webm"}, "sample rate 0"},
		{"encodings alone", func(d *sdk.Description) {
			d.Models[0].OutputFormats = nil
			d.Models[0].Encodings = []sdk.Encoding{{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 128}, {Format: sdk.FormatPCM, SampleRate: 24000}}
		}, []string{"webm"}, ""},
		{"encoding twice", func(d *sdk.Description) {
			d.Models[0].OutputFormats = nil
			d.Models[0].Encodings = []sdk.Encoding{{Format: sdk.FormatOpus}, {Format: sdk.FormatOpus}}
		}, []string{"webm"}, "listed twice"},
		{"raw encoding without a rate", func(d *sdk.Description) {
			d.Models[0].OutputFormats = nil
			d.Models[0].Encodings = []sdk.Encoding{{Format: sdk.FormatULaw}}
		}, []string{"webm"}, "needs its sample rate"},
		{"encodings and formats disagree", func(d *sdk.Description) {
			d.Models[0].Encodings = []sdk.Encoding{{Format: sdk.FormatOpus, SampleRate: 48000}}
		}, []string{"webm"}, "differ from the formats of Encodings"},
		{"encoding in an unknown format", func(d *sdk.Description) {
			d.Models[0].OutputFormats = nil
			d.Models[0].Encodings = []sdk.Encoding{{Format: "ogg"}}
		}, []string{"webm"}, `unknown format "ogg"`},
		{"pass-through model", withAny(sdk.Model{ID: sdk.AnyModel, OutputFormats: []string{sdk.FormatWAV, sdk.FormatMP3}}), []string{"webm"}, ""},
		{"pass-through model without formats", withAny(sdk.Model{ID: sdk.AnyModel}), []string{"webm"}, "sdk.AnyModel, for the ids the provider does not list): no output formats"},
		{"pass-through model with an unknown format", withAny(sdk.Model{ID: sdk.AnyModel, OutputFormats: []string{"ogg"}}), []string{"webm"}, `unknown output format "ogg"`},
		{"pass-through model with a negative limit", withAny(sdk.Model{ID: sdk.AnyModel, OutputFormats: []string{sdk.FormatMP3}, MaxTextChars: -1}), []string{"webm"}, "MaxTextChars -1"},
		{"pass-through model twice", func(d *sdk.Description) {
			wild := sdk.Model{ID: sdk.AnyModel, OutputFormats: []string{sdk.FormatWAV}}
			d.Models = append(d.Models, wild, wild)
		}, []string{"webm"}, "duplicate ID"},
		{"pass-through model as the default", func(d *sdk.Description) {
			withAny(sdk.Model{ID: sdk.AnyModel, OutputFormats: []string{sdk.FormatWAV}})(d)
			d.DefaultModel = sdk.AnyModel
		}, []string{"webm"}, "default model is sdk.AnyModel"},
		{"only a pass-through model", func(d *sdk.Description) {
			d.Models = []sdk.Model{{ID: sdk.AnyModel, OutputFormats: []string{sdk.FormatWAV}}}
		}, nil, "no models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := goodDescription()
			tt.mutate(d)
			err := ValidateDescription(d, tt.custom)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// withAny adds m, an sdk.AnyModel entry, to a description.
func withAny(m sdk.Model) func(d *sdk.Description) {
	return func(d *sdk.Description) { d.Models = append(d.Models, m) }
}

// TestPickModel: the model under test is a listed one; the sdk.AnyModel
// entry is never synthesized with, whether named or the default.
func TestPickModel(t *testing.T) {
	tests := []struct {
		name, model, def string
		want             string // the picked model's ID; "" means an error
	}{
		{"default", "", "m1", "m1"},
		{"named", "m2", "m1", "m2"},
		{"wildcard named", sdk.AnyModel, "m1", ""},
		{"wildcard as default", "", sdk.AnyModel, ""},
		{"unlisted", "m3", "m1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := goodDescription()
			withAny(sdk.Model{ID: sdk.AnyModel, OutputFormats: []string{sdk.FormatWAV}})(d)
			d.DefaultModel = tt.def
			r := &runner{cfg: Config{Model: tt.model}, desc: d}
			err := r.pickModel()
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("picked %q, want an error", r.model.ID)
			case tt.want != "" && (err != nil || r.model.ID != tt.want):
				t.Errorf("picked %q (%v), want %q", r.model.ID, err, tt.want)
			}
		})
	}
}

func TestValidateVoices(t *testing.T) {
	if err := ValidateVoices([]sdk.Voice{{ID: "a"}, {ID: "b"}}); err != nil {
		t.Errorf("good voices: %v", err)
	}
	if err := ValidateVoices([]sdk.Voice{{ID: "a"}, {Name: "nameless"}}); err == nil {
		t.Error("a voice without ID passed")
	}
	if err := ValidateVoices([]sdk.Voice{{ID: "a"}, {ID: "a"}}); err == nil {
		t.Error("duplicate IDs passed")
	}
}

func ts(text string, start, end float64) sdk.WordTimestamp {
	return sdk.WordTimestamp{Text: text, Start: start, End: end}
}

func TestValidateTimestamps(t *testing.T) {
	const text = "one two three four"
	good := []sdk.WordTimestamp{ts("one", 0, 0.3), ts("two", 0.35, 0.6), ts("three", 0.6, 1.0), ts("four", 1.1, 1.5)}
	tests := []struct {
		name    string
		ts      []sdk.WordTimestamp
		clip    float64
		wantErr string
	}{
		{"good", good, 1.6, ""},
		{"touching the end within tolerance", good, 1.45, ""},
		{"split words", append(append([]sdk.WordTimestamp{}, good...), ts("s", 1.5, 1.55)), 1.6, ""},
		{"none", nil, 1.6, "no timestamps"},
		{"far too few", good[:1], 1.6, "1 timestamps for 4 words"},
		{"past the end", good, 1.0, "ends after the clip"},
		{"reversed", []sdk.WordTimestamp{good[1], good[0], good[2], good[3]}, 1.6, "before the previous word"},
		{"end before start", []sdk.WordTimestamp{good[0], ts("two", 0.6, 0.35), good[2], good[3]}, 1.6, "starts after it ends"},
		{"negative", []sdk.WordTimestamp{ts("one", -0.5, 0.3), good[1], good[2], good[3]}, 1.6, "before the clip"},
		{"blank text", []sdk.WordTimestamp{ts(" ", 0, 0.3), good[1], good[2], good[3]}, 1.6, "no text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTimestamps(tt.ts, text, tt.clip)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFitText(t *testing.T) {
	tests := []struct {
		text  string
		limit int
		want  string
	}{
		{"hello world", 0, "hello world"},
		{"hello world", 11, "hello world"},
		{"hello world", 8, "hello"},
		{"héllo wörld", 9, "héllo"},
		{"abcdefgh", 4, "abcd"},
	}
	for _, tt := range tests {
		if got := fitText(tt.text, tt.limit); got != tt.want {
			t.Errorf("fitText(%q, %d) = %q, want %q", tt.text, tt.limit, got, tt.want)
		}
	}
}
