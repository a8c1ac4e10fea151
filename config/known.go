package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// documentBody returns the top mapping of a parsed document, or nil for an
// empty file.
func documentBody(root *yaml.Node) *yaml.Node {
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		return root.Content[0]
	}
	if root.Kind == 0 {
		return nil
	}
	return root
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// walkKnown records the line of every key path in lines and reports every
// key of n that t has no yaml field for, with its line and dotted path.
// yaml.v3 offers KnownFields only on a Decoder over text, and decoding text
// would lose the ${ENV} expansion done on the node tree, hence this small
// walk.
func walkKnown(n *yaml.Node, t reflect.Type, path string, lines map[string]int) []error {
	lines[path] = n.Line
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) && t.Kind() == reflect.Struct {
		// Provider and Moderator keep unknown keys as plugin settings;
		// only their known keys are checked.
		return walkStruct(n, t, path, true, lines)
	}
	switch t.Kind() {
	case reflect.Struct:
		return walkStruct(n, t, path, false, lines)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil // Decode reports the type error
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, walkKnown(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), lines)...)
		}
		return errs
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		var errs []error
		for i, c := range n.Content {
			errs = append(errs, walkKnown(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), lines)...)
		}
		return errs
	}
	return nil
}

func walkStruct(n *yaml.Node, t reflect.Type, path string, allowExtra bool, lines map[string]int) []error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ft, ok := fields[k.Value]
		if !ok {
			if allowExtra {
				lines[join(path, k.Value)] = k.Line
				continue
			}
			errs = append(errs, fmt.Errorf("line %d: unknown key %q", k.Line, join(path, k.Value)))
			continue
		}
		errs = append(errs, walkKnown(n.Content[i+1], ft, join(path, k.Value), lines)...)
	}
	return errs
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// splitKnown separates a mapping node into the known keys (as a node) and
// the other keys rendered as strings.
func splitKnown(n *yaml.Node, known map[string]bool) (*yaml.Node, map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, typeError("line %d: expected a mapping", n.Line)
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	settings := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if known[k.Value] {
			out.Content = append(out.Content, k, v)
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return nil, nil, typeError("line %d: plugin setting %q must be a plain value", v.Line, k.Value)
		}
		settings[k.Value] = v.Value
	}
	return out, settings, nil
}
