package main

import (
	"context"
	"math"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestTranscribeThroughPlugin transcribes the fake's own speech through
// the real plugin process: the plugin reports that it transcribes, sends
// the documented multipart request, and the word times come back.
func TestTranscribeThroughPlugin(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	d, err := p.Describe(t.Context())
	if err != nil || !d.Transcribes {
		t.Fatalf("describe: transcribes %v, %v", d != nil && d.Transcribes, err)
	}
	text := "Timing every word, exactly."
	resp, err := p.Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: "tts-1", Voice: "alloy", Text: text, Format: sdk.FormatWAV, Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.(sdk.Transcriber)
	got, err := tr.Transcribe(t.Context(), &sdk.TranscribeRequest{Model: "whisper-1", Audio: resp.Audio, MediaType: "audio/wav", Language: "en", Prompt: text, Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	want := fakeupstream.Speak(text, 1).Words
	if len(got.Words) != len(want) {
		t.Fatalf("words %+v, want %d", got.Words, len(want))
	}
	for i, w := range got.Words {
		if math.Abs(w.Start-want[i].Start) > 0.011 || math.Abs(w.End-want[i].End) > 0.011 {
			t.Errorf("word %d %+v, want %+v", i, w, want[i])
		}
	}
	if got.Words[1].Text != "every" || got.Language != "english" {
		t.Errorf("transcript %+v", got)
	}
	req, _ := srv.LastRequest()
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"model": "whisper-1", "response_format": "verbose_json", "timestamp_granularities[]": "word", "language": "en", "prompt": text} {
		if got := form.Value[k]; len(got) != 1 || got[0] != v {
			t.Errorf("form %s = %q, want %q", k, got, v)
		}
	}
}

func TestTranscribeRejects(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	cred := sdk.Credentials{APIKey: fake.Key}
	for _, c := range []struct {
		name string
		req  sdk.TranscribeRequest
		kind sdk.ErrorKind
	}{
		{"model without word times", sdk.TranscribeRequest{Model: "gpt-4o-transcribe", Audio: []byte("RIFF"), Credentials: cred}, sdk.KindInvalidRequest},
		{"no audio", sdk.TranscribeRequest{Credentials: cred}, sdk.KindInvalidRequest},
		{"unknown format", sdk.TranscribeRequest{Audio: []byte{1}, MediaType: "audio/ogg", Credentials: cred}, sdk.KindInvalidRequest},
		{"no key", sdk.TranscribeRequest{Audio: []byte{1}, MediaType: "audio/wav"}, sdk.KindUnauthorized},
		{"corrupt audio", sdk.TranscribeRequest{Audio: []byte("not a wav"), MediaType: "audio/wav", Credentials: cred}, sdk.KindInvalidRequest},
	} {
		_, err := p.Transcribe(context.Background(), &c.req)
		if e := sdk.AsError(err); e.Kind != c.kind {
			t.Errorf("%s: %v (kind %v), want %v", c.name, err, e.Kind, c.kind)
		}
	}
}
