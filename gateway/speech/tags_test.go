package speech_test

import (
	"slices"
	"testing"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// removed is the warning of an audio tag model testkit/test does not
// perform.
func removed(tag string) string {
	return "Audio tag " + tag + " is not supported by testkit/test and was removed."
}

// TestAudioTags: the audio tags a model does not perform are removed
// before the provider is called, each with a warning the answer carries;
// the ones it performs reach it as written, and never come back as
// words of the timestamps.
func TestAudioTags(t *testing.T) {
	tests := []struct {
		name     string
		performs []string
		text     string
		sent     string // what the provider is asked to speak
		warnings []string
		words    []string // the answer's timestamps
	}{
		{"none performed", nil, "Hello [laughs] there [whispers] friend", "Hello there friend",
			[]string{removed("[laughs]"), removed("[whispers]")}, []string{"Hello", "there", "friend"}},
		{"one performed", []string{"laughs"}, "Hello [laughs] there [whispers] friend", "Hello [laughs] there friend",
			[]string{removed("[whispers]")}, []string{"Hello", "there", "friend"}},
		{"every tag performed", []string{sdk.AnyAudioTag}, "Hello [laughs] there [whispers] friend", "Hello [laughs] there [whispers] friend",
			nil, []string{"Hello", "there", "friend"}},
		{"matched without case", []string{"laughs"}, "Ha [Laughs] ha", "Ha [Laughs] ha", nil, []string{"Ha", "ha"}},
		{"before punctuation", nil, "Well [sighs], fine", "Well, fine", []string{removed("[sighs]")}, []string{"Well,", "fine"}},
		{"no tags", nil, "Plain words only", "Plain words only", nil, []string{"Plain", "words", "only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{audioTags: tt.performs})
			out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", tt.text), speech.DeliverTimestamps)
			wantCode(t, err, "")
			if got := p.texts("testkit"); !slices.Equal(got, []string{tt.sent}) {
				t.Errorf("the provider was asked for %q, want %q", got, tt.sent)
			}
			if !slices.Equal(out.Result.Warnings, tt.warnings) {
				t.Errorf("warnings %q, want %q", out.Result.Warnings, tt.warnings)
			}
			var words []string
			for _, w := range out.Result.Timestamps {
				words = append(words, w.Text)
			}
			if !slices.Equal(words, tt.words) {
				t.Errorf("timestamps of %q, want %q", words, tt.words)
			}
		})
	}
}

// TestAudioTagsOnAStream: a stream has no envelope, so the warnings ride
// on the stream for the edge to send as headers.
func TestAudioTagsOnAStream(t *testing.T) {
	p := newPipeline(t, setup{})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Hello [laughs] there"), speech.DeliverStream)
	wantCode(t, err, "")
	drain(t, out.Stream)
	if got := p.texts("testkit"); !slices.Equal(got, []string{"Hello there"}) {
		t.Errorf("the provider was asked for %q", got)
	}
	if want := []string{removed("[laughs]")}; !slices.Equal(out.Stream.Warnings, want) {
		t.Errorf("warnings %q, want %q", out.Stream.Warnings, want)
	}
}

// TestOnlyAudioTags: a text that is nothing but tags the model does not
// perform has nothing left to say: a validation problem on text, and no
// provider call.
func TestOnlyAudioTags(t *testing.T) {
	p := newPipeline(t, setup{audioTags: []string{"laughs"}})
	_, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "[sighs] [whispers]"), speech.DeliverClip)
	pe := wantCode(t, err, problem.ValidationFailed)
	if len(pe.Validation) != 1 || !slices.Equal(pe.Validation[0].Path, []string{"text"}) {
		t.Errorf("validation %+v, want one error on text", pe.Validation)
	}
	if n := len(p.calls("testkit")); n != 0 {
		t.Errorf("%d provider calls, want none", n)
	}
	// The tags a model performs are something to say.
	_, err = p.speak(t.Context(), "acme", req("testkit/test", "alpha", "[laughs]"), speech.DeliverClip)
	wantCode(t, err, "")
}
