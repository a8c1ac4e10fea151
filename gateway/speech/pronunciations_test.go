package speech_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// dictionaries are acme's pronunciation dictionaries, by name.
type dictionaries map[string]string

// addDictionaries gives acme its default dictionary and two others, all
// with a rule for SQL, so that precedence shows in what the provider is
// asked to say:
//
//	default  GPU -> graphics processing unit, SQL -> sequel,
//	         New York -> the big apple
//	names    Nguyen -> win, SQL -> ess cue ell
//	second   SQL -> squeal
func addDictionaries(t *testing.T, p *pipeline) dictionaries {
	t.Helper()
	ctx := t.Context()
	def, err := p.store.DefaultDictionary(ctx, "acme", &store.Dictionary{ID: uuid.NewString(), Name: "Default"})
	if err != nil {
		t.Fatal(err)
	}
	ids := dictionaries{"default": def.ID}
	for _, name := range []string{"names", "second"} {
		d := &store.Dictionary{ID: uuid.NewString(), OrgID: "acme", Name: name}
		if err := p.store.CreateDictionary(ctx, d, 100); err != nil {
			t.Fatal(err)
		}
		ids[name] = d.ID
	}
	for _, r := range []struct{ dict, word, replacement string }{
		{"default", "GPU", "graphics processing unit"},
		{"default", "SQL", "sequel"},
		{"default", "New York", "the big apple"},
		{"names", "Nguyen", "win"},
		{"names", "SQL", "ess cue ell"},
		{"second", "SQL", "squeal"},
	} {
		rule := &store.PronunciationRule{ID: uuid.NewString(), OrgID: "acme", DictionaryID: ids[r.dict], Word: r.word, Replacement: r.replacement}
		if err := p.store.CreateRule(ctx, rule, 100); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// TestPronunciations: the organization's default dictionary always
// applies, the dictionaries a request lists override it in the order
// listed (the later wins on the same word), and the request's inline
// rules override them all; matching is on whole words, without case
// unless a rule asks for it, and a rule may span words.
func TestPronunciations(t *testing.T) {
	tests := []struct {
		name   string
		org    string
		text   string
		listed []string // dictionaries by name
		inline []speech.PronunciationRule
		sent   string
	}{
		{"default dictionary", "acme", "The GPU runs SQL", nil, nil, "The graphics processing unit runs sequel"},
		{"without case", "acme", "the gpu runs sql", nil, nil, "the graphics processing unit runs sequel"},
		{"whole words only", "acme", "GPUs and SQLite", nil, nil, "GPUs and SQLite"},
		{"several words", "acme", "Flights to New York", nil, nil, "Flights to the big apple"},
		{"a listed dictionary over the default", "acme", "Nguyen runs SQL on a GPU", []string{"names"}, nil, "win runs ess cue ell on a graphics processing unit"},
		{"the later listed wins", "acme", "Nguyen knows SQL", []string{"names", "second"}, nil, "win knows squeal"},
		{"listed the other way", "acme", "Nguyen knows SQL", []string{"second", "names"}, nil, "win knows ess cue ell"},
		{"inline over all", "acme", "Nguyen knows SQL", []string{"names", "second"},
			[]speech.PronunciationRule{{Word: "sql", Replacement: "structured query language"}}, "win knows structured query language"},
		{"a case-sensitive rule", "acme", "us and US", nil,
			[]speech.PronunciationRule{{Word: "US", Replacement: "United States", CaseSensitive: true}}, "us and United States"},
		{"another organization's default does not apply", "globex", "The GPU runs SQL", nil, nil, "The GPU runs SQL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{})
			ids := addDictionaries(t, p)
			r := req("testkit/test", "alpha", tt.text)
			if tt.listed != nil || tt.inline != nil {
				r.Pronunciations = &speech.Pronunciations{Rules: tt.inline}
				for _, name := range tt.listed {
					r.Pronunciations.DictionaryIDs = append(r.Pronunciations.DictionaryIDs, ids[name])
				}
			}
			out, err := p.speak(t.Context(), tt.org, r, speech.DeliverClip)
			wantCode(t, err, "")
			if got := p.texts("testkit"); !slices.Equal(got, []string{tt.sent}) {
				t.Errorf("the provider was asked for %q, want %q", got, tt.sent)
			}
			// What was written is what is billed and logged.
			if out.Row.CharCount != len(tt.text) {
				t.Errorf("row counts %d characters, want the request's %d", out.Row.CharCount, len(tt.text))
			}
		})
	}
}

// TestPronunciationTimestamps: timestamps are of the words the request
// wrote: the words a rule put in their place merge back into the word
// they replaced, from the start of the first to the end of the last.
func TestPronunciationTimestamps(t *testing.T) {
	p := newPipeline(t, setup{})
	addDictionaries(t, p)
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "The GPU runs SQL"), speech.DeliverTimestamps)
	wantCode(t, err, "")
	// The kit's own timing of what it was asked to say.
	kit, err := p.providers["testkit"].Provider.Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: "test", Voice: "alpha",
		Text: "The graphics processing unit runs sequel", Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	k := kit.Timestamps // The graphics processing unit runs sequel
	want := []sdk.WordTimestamp{
		{Text: "The", Start: k[0].Start, End: k[0].End},
		{Text: "GPU", Start: k[1].Start, End: k[3].End},
		{Text: "runs", Start: k[4].Start, End: k[4].End},
		{Text: "SQL", Start: k[5].Start, End: k[5].End},
	}
	got := out.Result.Timestamps
	if len(got) != len(want) {
		t.Fatalf("timestamps %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Text != want[i].Text || math.Abs(got[i].Start-want[i].Start) > 1e-9 || math.Abs(got[i].End-want[i].End) > 1e-9 {
			t.Errorf("timestamp %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestPronunciationDictionaryErrors: a listed dictionary that is not the
// organization's is 404 dictionary_not_found on the field that named it,
// and a store that cannot be read fails the request as storage's
// failure; neither reaches the provider.
func TestPronunciationDictionaryErrors(t *testing.T) {
	p := newPipeline(t, setup{})
	ids := addDictionaries(t, p)
	r := req("testkit/test", "alpha", "Nguyen knows SQL")
	r.Pronunciations = &speech.Pronunciations{DictionaryIDs: []string{ids["names"]}}
	_, err := p.speak(t.Context(), "globex", r, speech.DeliverClip)
	pe := wantCode(t, err, problem.DictionaryNotFound)
	if len(pe.Validation) != 1 || !slices.Equal(pe.Validation[0].Path, []string{"pronunciations", "dictionaryIds"}) {
		t.Errorf("validation %+v, want one on pronunciations.dictionaryIds", pe.Validation)
	}
	p.store.SetDown(true)
	_, err = p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Nguyen knows SQL"), speech.DeliverClip)
	wantCode(t, err, problem.StorageUnavailable)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("%v does not wrap store.ErrUnavailable", err)
	}
	if n := len(p.calls("testkit")); n != 0 {
		t.Errorf("%d provider calls, want none", n)
	}
}
