package elevenlabs

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// AddFromFilePath is where pronunciation dictionaries are uploaded as PLS
// files (the API reference's "Add a pronunciation dictionary").
const AddFromFilePath = "/v1/pronunciation-dictionaries/add-from-file"

// lexiconStore is the fake's pronunciation dictionaries, per key.
type lexiconStore struct {
	mu sync.Mutex
	n  int
	// byID holds every dictionary by id, with the key that made it.
	byID map[string]storedLexicon
	// uploads counts the uploads per key.
	uploads map[string]int
	// locators are the locators each text-to-speech request named.
	locators [][]Locator
}

type storedLexicon struct {
	key, version string
	doc          []byte
}

// Locator is a pronunciation_dictionary_locators entry as received.
type Locator struct {
	ID        string  `json:"pronunciation_dictionary_id"`
	VersionID *string `json:"version_id"`
}

// Uploads returns how many pronunciation dictionaries key has uploaded.
func (s *Server) Uploads(key string) int {
	s.lex.mu.Lock()
	defer s.lex.mu.Unlock()
	return s.lex.uploads[key]
}

// Locators returns the locators of every text-to-speech request so far,
// in order (nil for a request that named none).
func (s *Server) Locators() [][]Locator {
	s.lex.mu.Lock()
	defer s.lex.mu.Unlock()
	return append([][]Locator(nil), s.lex.locators...)
}

// Lexicon returns an uploaded PLS document by dictionary id.
func (s *Server) Lexicon(id string) []byte {
	s.lex.mu.Lock()
	defer s.lex.mu.Unlock()
	return s.lex.byID[id].doc
}

// addFromFile takes a multipart upload of name, optional description and
// a PLS file, which must be a well-formed PLS 1.0 lexicon: every lexeme a
// grapheme and a phoneme or an alias.
func (s *Server) addFromFile(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		validation(w, []string{"body"}, "expected multipart/form-data: "+err.Error(), "value_error")
		return
	}
	for field := range form.Value {
		if field != "name" && field != "description" && field != "workspace_access" {
			validation(w, []string{"body", field}, "extra fields not permitted", "value_error.extra")
			return
		}
	}
	if strings.TrimSpace(first(form.Value["name"])) == "" {
		validation(w, []string{"body", "name"}, "field required", "value_error.missing")
		return
	}
	files := form.File["file"]
	if len(files) != 1 {
		validation(w, []string{"body", "file"}, "field required", "value_error.missing")
		return
	}
	f, err := files[0].Open()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	doc, _ := io.ReadAll(f)
	_ = f.Close()
	n, err := CheckPLS(doc)
	if err != nil {
		detail(w, http.StatusBadRequest, "invalid_pls", "The lexicon file is not a valid PLS document: "+err.Error())
		return
	}
	key := r.Header.Get("xi-api-key")
	s.lex.mu.Lock()
	s.lex.n++
	id, version := fmt.Sprintf("pdFake%08d", s.lex.n), fmt.Sprintf("pdvFake%08d", s.lex.n)
	s.lex.byID[id] = storedLexicon{key: key, version: version, doc: doc}
	s.lex.uploads[key]++
	s.lex.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "name": first(form.Value["name"]), "version_id": version,
		"created_by": "fake", "creation_time_unix": 0, "description": first(form.Value["description"]),
		"version_rules_num": n, "permission_on_resource": "admin"})
}

// CheckPLS reports whether doc is a PLS 1.0 lexicon as ElevenLabs reads
// one: the lexicon root in the PLS namespace with version and alphabet,
// every lexeme with a grapheme and a non-empty phoneme or alias, no DTD.
// It returns the number of lexemes.
func CheckPLS(doc []byte) (int, error) {
	var lx struct {
		XMLName  xml.Name `xml:"http://www.w3.org/2005/01/pronunciation-lexicon lexicon"`
		Version  string   `xml:"version,attr"`
		Alphabet string   `xml:"alphabet,attr"`
		Lexemes  []struct {
			Graphemes []string `xml:"grapheme"`
			Phonemes  []string `xml:"phoneme"`
			Aliases   []string `xml:"alias"`
		} `xml:"lexeme"`
	}
	if strings.Contains(string(doc), "<!DOCTYPE") {
		return 0, fmt.Errorf("a DTD is not accepted")
	}
	if err := xml.Unmarshal(doc, &lx); err != nil {
		return 0, err
	}
	if lx.Version != "1.0" || lx.Alphabet == "" {
		return 0, fmt.Errorf("the lexicon needs version 1.0 and an alphabet (got %q, %q)", lx.Version, lx.Alphabet)
	}
	if len(lx.Lexemes) == 0 {
		return 0, fmt.Errorf("no lexeme")
	}
	for i, le := range lx.Lexemes {
		if len(le.Graphemes) == 0 || strings.TrimSpace(le.Graphemes[0]) == "" {
			return 0, fmt.Errorf("lexeme %d has no grapheme", i+1)
		}
		if (len(le.Phonemes) == 0 || strings.TrimSpace(le.Phonemes[0]) == "") && (len(le.Aliases) == 0 || strings.TrimSpace(le.Aliases[0]) == "") {
			return 0, fmt.Errorf("lexeme %d has neither a phoneme nor an alias", i+1)
		}
	}
	return len(lx.Lexemes), nil
}

// checkLocators records the locators of a text-to-speech body and
// refuses ones naming a dictionary the fake made for another key or at
// another version.
func (s *Server) checkLocators(w http.ResponseWriter, key string, raw []json.RawMessage) bool {
	locs := make([]Locator, 0, len(raw))
	for i, m := range raw {
		var l Locator
		if err := json.Unmarshal(m, &l); err != nil || l.ID == "" {
			validation(w, []string{"body", "pronunciation_dictionary_locators", fmt.Sprint(i)}, "field required", "value_error.missing")
			return false
		}
		locs = append(locs, l)
	}
	s.lex.mu.Lock()
	defer s.lex.mu.Unlock()
	if len(raw) > 0 {
		s.lex.locators = append(s.lex.locators, locs)
	} else {
		s.lex.locators = append(s.lex.locators, nil)
	}
	for _, l := range locs {
		// Dictionaries the fake did not make stand for ones made on
		// ElevenLabs' site (tests and documentation examples name such
		// ids); those it made must be the key's, at their version.
		d, ok := s.lex.byID[l.ID]
		if !ok && !strings.HasPrefix(l.ID, "pdFake") {
			continue
		}
		if !ok || d.key != key || l.VersionID != nil && *l.VersionID != d.version {
			detail(w, http.StatusNotFound, "pronunciation_dictionary_not_found", fmt.Sprintf("Pronunciation dictionary %s was not found.", l.ID))
			return false
		}
	}
	return true
}
