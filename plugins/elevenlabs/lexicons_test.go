package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

const plsDoc = `<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwɪn</phoneme></lexeme>
</lexicon>
`

// TestLexiconsUploadedOncePerKey: a lexicon version is uploaded once per
// provider key, in process and through the plugin process, and named by
// its locator on every request; a new version (a changed dictionary) is
// uploaded again; another key uploads its own; locators stay within the
// cap together with the caller's.
func TestLexiconsUploadedOncePerKey(t *testing.T) {
	const other = "xi-test-other-0123456789abcdef"
	for name, p := range map[string]sdk.Provider{"in process": New(), "over the wire": sdktest.StartPlugin(t, pluginPath)} {
		t.Run(name, func(t *testing.T) {
			srv := fake.New(t, fakeupstream.Options{Keys: []string{fake.Key, other}})
			if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			say := func(key string, lx ...sdk.Lexicon) error {
				req := request(key)
				req.Model, req.Text, req.Lexicons = "eleven_flash_v2", "Mister Nguyen", lx
				_, err := p.Synthesize(t.Context(), req)
				return err
			}
			v1 := sdk.Lexicon{ID: "voxgate-a", Version: "a", Document: []byte(plsDoc)}
			for range 3 {
				if err := say(fake.Key, v1); err != nil {
					t.Fatal(err)
				}
			}
			if n := srv.Uploads(fake.Key); n != 1 {
				t.Errorf("%d uploads for three requests of one version, want 1", n)
			}
			locs := srv.Locators()
			if len(locs) != 3 || len(locs[2]) != 1 || locs[2][0].ID != locs[0][0].ID || locs[2][0].VersionID == nil {
				t.Fatalf("locators %+v", locs)
			}
			if _, err := fake.CheckPLS(srv.Lexicon(locs[0][0].ID)); err != nil {
				t.Errorf("the uploaded lexicon: %v", err)
			}
			v2 := sdk.Lexicon{ID: "voxgate-b", Version: "b", Document: []byte(plsDoc)}
			if err := say(fake.Key, v2); err != nil {
				t.Fatal(err)
			}
			if n := srv.Uploads(fake.Key); n != 2 {
				t.Errorf("%d uploads after a new version, want 2", n)
			}
			if err := say(other, v1); err != nil {
				t.Fatal(err)
			}
			if n := srv.Uploads(other); n != 1 {
				t.Errorf("another key uploaded %d times, want 1", n)
			}
			// Three of the caller's locators leave no room.
			req := request(fake.Key)
			req.Model, req.Lexicons = "eleven_flash_v2", []sdk.Lexicon{v1}
			req.Options = []byte(`{"pronunciation_dictionary_locators":[{"pronunciation_dictionary_id":"x"},{"pronunciation_dictionary_id":"y"},{"pronunciation_dictionary_id":"z"}]}`)
			if _, err := p.Synthesize(t.Context(), req); err == nil || sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
				t.Errorf("four locators: %v, want an invalid request", err)
			}
		})
	}
}
