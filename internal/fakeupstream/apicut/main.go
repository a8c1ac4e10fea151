// Command apicut cuts a provider's published OpenAPI document down to the
// operations a fake serves, mechanically: the chosen operations of the
// chosen paths, every component they reach through $ref (transitively),
// the security schemes they name, and the document's openapi, info and
// servers. Nothing is rewritten but the layout (block YAML), and the
// output starts with a header naming where the upstream file came from
// and its SHA-256, so that anyone can fetch the same file and cut it
// again to the same result.
//
// Usage:
//
//	go run ./internal/fakeupstream/apicut -in FILE -out apispec/x.yaml \
//	    -name OpenAI -source https://github.com/openai/openai-openapi \
//	    -path openapi.yaml -version "f85dbe2 (2026-08-21)" \
//	    -op "POST /audio/speech" -op "GET /models"
//
// The upstream file itself is not kept in the repository.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

type opList []string

func (o *opList) String() string     { return strings.Join(*o, ", ") }
func (o *opList) Set(v string) error { *o = append(*o, v); return nil }

func main() {
	var (
		in, out, name, source, path, version, user string
		ops                                        opList
	)
	flag.StringVar(&in, "in", "", "the upstream document (JSON or YAML)")
	flag.StringVar(&out, "out", "", "where to write the cut document")
	flag.StringVar(&name, "name", "", "whose document it is, e.g. OpenAI")
	flag.StringVar(&source, "source", "", "where the upstream document is published (repository or URL)")
	flag.StringVar(&path, "path", "", "the upstream file's path in its repository")
	flag.StringVar(&version, "version", "", "the upstream file's version, commit or date")
	flag.StringVar(&user, "for", "the fake", "what serves the operations kept, for the header")
	flag.Var(&ops, "op", `an operation to keep, "METHOD /path" (repeatable)`)
	flag.Parse()
	if err := run(in, out, name, source, path, version, user, ops); err != nil {
		fmt.Fprintln(os.Stderr, "apicut:", err)
		os.Exit(1)
	}
}

func run(in, out, name, source, path, version, user string, ops []string) error {
	if in == "" || out == "" || name == "" || source == "" || len(ops) == 0 {
		return errors.New("-in, -out, -name, -source and at least one -op are required")
	}
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(src)
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	cut, err := cutDocument(root.Content[0], ops)
	if err != nil {
		return err
	}
	plain(cut)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The API document %s publishes, cut down to the operations %s serves\n", name, user)
	fmt.Fprintf(&b, "# by internal/fakeupstream/apicut (the operations as given, every component\n")
	fmt.Fprintf(&b, "# they reach, nothing rewritten). Do not edit: cut it again from a newer file.\n")
	fmt.Fprintf(&b, "#   source:  %s\n", source)
	if path != "" {
		fmt.Fprintf(&b, "#   file:    %s\n", path)
	}
	if version != "" {
		fmt.Fprintf(&b, "#   version: %s\n", version)
	}
	fmt.Fprintf(&b, "#   sha256:  %s (of the upstream file)\n", hex.EncodeToString(sum[:]))
	fmt.Fprintf(&b, "#   operations: %s\n", strings.Join(ops, ", "))
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cut); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// get returns the value of key in mapping m, nil if absent.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, str(key), v)
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// cutDocument keeps ops of doc and what they reach.
func cutDocument(doc *yaml.Node, ops []string) (*yaml.Node, error) {
	out := mapping()
	for _, k := range []string{"openapi", "info", "servers"} {
		if v := get(doc, k); v != nil {
			set(out, k, v)
		}
	}
	if v := get(doc, "security"); v != nil {
		set(out, "security", v)
	}
	srcPaths := get(doc, "paths")
	outPaths := mapping()
	want := map[string][]string{}
	var order []string
	for _, op := range ops {
		method, p, ok := strings.Cut(strings.TrimSpace(op), " ")
		if !ok {
			return nil, fmt.Errorf("operation %q is not METHOD /path", op)
		}
		if _, seen := want[p]; !seen {
			order = append(order, p)
		}
		want[p] = append(want[p], strings.ToLower(method))
	}
	for _, p := range order {
		item := get(srcPaths, p)
		if item == nil {
			return nil, fmt.Errorf("the document has no path %s", p)
		}
		kept := mapping()
		for i := 0; i+1 < len(item.Content); i += 2 {
			k := item.Content[i].Value
			isMethod := false
			for _, m := range methods {
				isMethod = isMethod || k == m
			}
			if !isMethod {
				kept.Content = append(kept.Content, item.Content[i], item.Content[i+1])
				continue
			}
			for _, m := range want[p] {
				if k == m {
					kept.Content = append(kept.Content, item.Content[i], item.Content[i+1])
				}
			}
		}
		for _, m := range want[p] {
			if get(item, m) == nil {
				return nil, fmt.Errorf("the document has no %s %s", strings.ToUpper(m), p)
			}
		}
		set(outPaths, p, kept)
	}
	set(out, "paths", outPaths)

	// Components reached from what is kept, to a fixed point.
	comps := get(doc, "components")
	reached := map[string]map[string]bool{}
	var queue []*yaml.Node
	queue = append(queue, outPaths)
	if s := get(out, "security"); s != nil {
		queue = append(queue, s)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, ref := range refs(n) {
			kind, name, ok := componentRef(ref)
			if !ok {
				// A reference into a schema's own $defs (Mistral's
				// event-stream schemas) travels with the schema.
				if strings.HasPrefix(ref, "#/$defs/") {
					continue
				}
				return nil, fmt.Errorf("reference %q is not to a component of this document", ref)
			}
			if reached[kind][name] {
				continue
			}
			v := get(get(comps, kind), name)
			if v == nil {
				return nil, fmt.Errorf("reference %q names no component", ref)
			}
			if reached[kind] == nil {
				reached[kind] = map[string]bool{}
			}
			reached[kind][name] = true
			queue = append(queue, v)
		}
		for _, scheme := range securityNames(n) {
			if reached["securitySchemes"][scheme] {
				continue
			}
			if v := get(get(comps, "securitySchemes"), scheme); v != nil {
				if reached["securitySchemes"] == nil {
					reached["securitySchemes"] = map[string]bool{}
				}
				reached["securitySchemes"][scheme] = true
			}
		}
	}
	if len(reached) > 0 {
		outComps := mapping()
		kinds := make([]string, 0, len(reached))
		for k := range reached {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, kind := range kinds {
			src := get(comps, kind)
			m := mapping()
			// The upstream order, so that a newer cut diffs cleanly.
			for i := 0; i+1 < len(src.Content); i += 2 {
				if reached[kind][src.Content[i].Value] {
					m.Content = append(m.Content, src.Content[i], src.Content[i+1])
				}
			}
			set(outComps, kind, m)
		}
		set(out, "components", outComps)
	}
	return out, nil
}

// refs returns every $ref value under n.
func refs(n *yaml.Node) []string {
	var out []string
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "$ref" && n.Content[i+1].Kind == yaml.ScalarNode {
					out = append(out, n.Content[i+1].Value)
				}
			}
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			walk(n.Alias)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return out
}

// securityNames returns the scheme names of every security requirement
// list ("security": [{name: [...]}]) under n.
func securityNames(n *yaml.Node) []string {
	var out []string
	var walk func(*yaml.Node, bool)
	walk = func(n *yaml.Node, inSecurity bool) {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			walk(n.Alias, inSecurity)
			return
		}
		if inSecurity && n.Kind == yaml.SequenceNode {
			for _, req := range n.Content {
				if req.Kind == yaml.AliasNode && req.Alias != nil {
					req = req.Alias
				}
				for i := 0; i+1 < len(req.Content); i += 2 {
					out = append(out, req.Content[i].Value)
				}
			}
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], n.Content[i].Value == "security")
			}
			return
		}
		for _, c := range n.Content {
			walk(c, false)
		}
	}
	walk(n, true)
	return out
}

// componentRef splits "#/components/schemas/Name".
func componentRef(ref string) (kind, name string, ok bool) {
	rest, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return "", "", false
	}
	kind, name, ok = strings.Cut(rest, "/")
	name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	return kind, name, ok && name != ""
}

// plain clears the layout styles a JSON source brings (flow mappings,
// double-quoted strings), so that the output is block YAML; the encoder
// quotes a string wherever plain text would read as another type. Aliases
// are resolved into copies, so that the output stands without anchors.
func plain(n *yaml.Node) {
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode && c.Alias != nil {
			cp := *c.Alias
			cp.Anchor = ""
			n.Content[i] = &cp
		}
	}
	n.Style, n.Anchor = 0, ""
	for _, c := range n.Content {
		plain(c)
	}
}
