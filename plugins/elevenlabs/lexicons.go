package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"sync"

	"github.com/voxgate/voxgate/sdk"
)

// maxLocators is ElevenLabs' bound on pronunciation_dictionary_locators
// per request (the text-to-speech API reference: "up to 3").
const maxLocators = 3

// lexicons uploads the PLS lexicons the gateway compiles from phoneme
// rules (sdk.Lexicon) as ElevenLabs pronunciation dictionaries, once per
// provider key and lexicon version, and remembers the locators: a
// request names a lexicon by its locator, so an unchanged dictionary
// costs no upload after its first, and a changed one (a new version) is
// uploaded again.
type lexicons struct {
	mu sync.Mutex
	// byKey maps a key's hash and a lexicon version to its upload.
	byKey map[lexiconKey]*upload
}

// lexiconKey holds a hash of the provider key, never the key.
type lexiconKey struct{ key, version string }

// upload is one lexicon version's upload under one key; done closes when
// it has finished, and a failed one is forgotten so a later request
// tries again.
type upload struct {
	done chan struct{}
	loc  locator
	err  error
}

func newLexicons() *lexicons { return &lexicons{byKey: map[lexiconKey]*upload{}} }

// locators returns the locators of ls under key, uploading the versions
// not uploaded yet; concurrent requests for one version share its upload.
func (l *lexicons) locators(ctx context.Context, cfg *config, key string, ls []sdk.Lexicon) ([]locator, error) {
	sum := sha256.Sum256([]byte(key))
	kh := hex.EncodeToString(sum[:])
	out := make([]locator, 0, len(ls))
	for _, lx := range ls {
		k := lexiconKey{kh, lx.Version}
		l.mu.Lock()
		u, ok := l.byKey[k]
		if !ok {
			u = &upload{done: make(chan struct{})}
			l.byKey[k] = u
		}
		l.mu.Unlock()
		if !ok {
			u.loc, u.err = uploadLexicon(ctx, cfg, key, lx)
			if u.err != nil {
				l.mu.Lock()
				delete(l.byKey, k)
				l.mu.Unlock()
			}
			close(u.done)
		}
		select {
		case <-u.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if u.err != nil {
			return nil, u.err
		}
		out = append(out, u.loc)
	}
	return out, nil
}

// uploadLexicon adds lx as a pronunciation dictionary
// (POST /v1/pronunciation-dictionaries/add-from-file, multipart name and
// file) and returns its locator: the dictionary id and version id.
func uploadLexicon(ctx context.Context, cfg *config, key string, lx sdk.Lexicon) (locator, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("name", lx.ID)
	_ = mw.WriteField("description", "voxgate pronunciation lexicon, version "+lx.Version)
	fw, _ := mw.CreateFormFile("file", lx.ID+".pls")
	_, _ = fw.Write(lx.Document) // writes to memory
	_ = mw.Close()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/v1/pronunciation-dictionaries/add-from-file", &body)
	if err != nil {
		return locator{}, sdk.Errorf(sdk.KindInternal, "elevenlabs: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		ID        string `json:"id"`
		VersionID string `json:"version_id"`
	}
	if err := cfg.DoJSON(ctx, hreq, key, false, "pronunciation dictionary answer", &out); err != nil {
		return locator{}, err
	}
	if out.ID == "" {
		return locator{}, &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: the pronunciation dictionary answer has no id"}
	}
	loc := locator{PronunciationDictionaryID: out.ID}
	if out.VersionID != "" {
		loc.VersionID = &out.VersionID
	}
	return loc, nil
}

// attachLexicons adds the locators of req's lexicons to c's body, after
// any the caller gave in providerOptions; more than ElevenLabs takes is
// the caller's mistake.
func (p *Provider) attachLexicons(ctx context.Context, c *call, req *sdk.SynthesizeRequest) error {
	if len(req.Lexicons) == 0 {
		return nil
	}
	if n := len(c.body.PronunciationDictionaryLocators) + len(req.Lexicons); n > maxLocators {
		return sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: %d pronunciation dictionaries (%d from providerOptions, %d from the organization's phoneme rules); a request takes at most %d",
			n, len(c.body.PronunciationDictionaryLocators), len(req.Lexicons), maxLocators)
	}
	locs, err := p.lexicons.locators(ctx, p.cfg.Load(), req.Credentials.APIKey, req.Lexicons)
	if err != nil {
		return err
	}
	c.body.PronunciationDictionaryLocators = append(c.body.PronunciationDictionaryLocators, locs...)
	return nil
}
