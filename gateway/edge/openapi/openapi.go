// Package openapi holds voxgate's OpenAPI 3.1 document (openapi.yaml),
// which describes every route, body, response and problem code of the
// gateway's three dialects. The server serves it as JSON at
// GET /v1/openapi.json; the tests validate it, and every response they
// receive, against it.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var source []byte

// JSON returns the document as JSON, a copy the caller may keep. The
// YAML source is the one to edit: it is shorter to read and can carry
// comments. Each path gains its OPTIONS operation here (CORS preflights
// are answered on every route), rather than repeating the same block
// under every path in the source.
func JSON() ([]byte, error) {
	b, err := converted()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// converted is the conversion, made once per process: the document is a
// constant of the binary, and parsing its 170 KB of YAML again was a
// seventh of the CPU of end-to-end tests that start gateways in process.
var converted = sync.OnceValues(convert)

// convert is JSON's conversion of the YAML source.
func convert() ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi: no paths")
	}
	names := make([]string, 0, len(paths))
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		item, ok := paths[p].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("openapi: path %s is not an object", p)
		}
		item["options"] = map[string]any{
			"tags":        []any{"operations"},
			"operationId": "options" + operationSuffix(p),
			"security":    []any{},
			"summary":     "CORS preflight, or the methods of " + p,
			"responses": map[string]any{
				"204":     map[string]any{"description": "Allowed: Access-Control-Allow-* headers for a preflight, Allow for a plain OPTIONS request"},
				"default": map[string]any{"$ref": "#/components/responses/Preflight"},
			},
		}
	}
	return json.Marshal(doc)
}

// operationSuffix turns a path into an identifier part:
// /v1/voices/{id} becomes _v1_voices_id.
func operationSuffix(p string) string {
	return strings.NewReplacer("/", "_", "{", "", "}", "", ".", "_", "-", "_").Replace(p)
}
