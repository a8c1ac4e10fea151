package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads, expands, decodes and validates a config file. A file with
// mistakes gives an *Errors naming every one of them.
func Load(path string) (*Config, error) {
	cfg, _, err := LoadBytes(path)
	return cfg, err
}

// LoadBytes is Load, also returning the file's bytes as read (a reload
// hashes exactly what it loaded).
func LoadBytes(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if err != nil {
		var es *Errors
		if errors.As(err, &es) {
			es.File = path
			if es.Partial != nil {
				es.Partial.Dir = dirOf(path)
			}
		}
		return nil, data, err
	}
	cfg.Dir = dirOf(path)
	return cfg, data, nil
}

// Errors is every mistake found in a config file, each naming its line
// and key, in file order where the line is known.
type Errors struct {
	// File is the config file's path ("" for Parse).
	File string
	// Errs are the mistakes.
	Errs []error
	// Warnings are as Config.Warnings.
	Warnings []string
	// Partial is the config as far as it decoded, defaults applied, for
	// checks of what it names (`voxgate config check` looks for its
	// plugin binaries); nil when the text is not YAML. Never start from
	// it.
	Partial *Config
}

// Error lists the mistakes, one a line.
func (e *Errors) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if len(e.Errs) == 1 {
		b.WriteString(e.Errs[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, "%d mistakes:", len(e.Errs))
	for _, err := range e.Errs {
		b.WriteString("\n  ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the mistakes.
func (e *Errors) Unwrap() []error { return e.Errs }

func dirOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "."
	}
	if i == 0 {
		return "/"
	}
	return path[:i]
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Parse decodes and validates config text. lookup resolves ${ENV}
// references (os.LookupEnv in production); an unset variable without a
// `${NAME:-default}` default expands to "" and gives a warning. Every
// mistake is reported, in one *Errors.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	// Expand inside scalar values only, after parsing, so that a secret
	// containing YAML syntax cannot change the document's structure.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Errors{Errs: []error{errors.New(strings.TrimPrefix(err.Error(), "yaml: "))}}
	}
	cfg := &Config{lines: map[string]int{}}
	var errs []error
	if doc := documentBody(&root); doc != nil {
		expandNode(doc, "", lookup, func(line int, key, name string) {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("line %d: %s: ${%s} is not set, so the value is empty", line, key, name))
		})
		errs = append(errs, walkKnown(doc, reflect.TypeOf(cfg).Elem(), "", cfg.lines)...)
		if err := doc.Decode(cfg); err != nil {
			errs = append(errs, cfg.decodeErrors(err)...)
		}
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	if len(errs) > 0 {
		sortByLine(errs)
		return nil, &Errors{Errs: errs, Warnings: cfg.Warnings, Partial: cfg}
	}
	return cfg, nil
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// SortByLine orders mistakes by the line they name ("line N: ..."), those
// naming none last in the order they came: what `voxgate config check`
// does with the config's own mistakes and the plugins' together.
func SortByLine(errs []error) { sortByLine(errs) }

// sortByLine orders errors by the line they name; those naming none go
// last, in the order they came.
func sortByLine(errs []error) {
	line := func(err error) int {
		if m := lineRef.FindStringSubmatch(err.Error()); m != nil && strings.HasPrefix(err.Error(), "line ") {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return math.MaxInt
	}
	sort.SliceStable(errs, func(i, j int) bool { return line(errs[i]) < line(errs[j]) })
}

// expandNode replaces ${NAME} and ${NAME:-default} in the scalar values
// under n (whose key path is path) and calls unset for each variable that
// is not set and has no default.
func expandNode(n *yaml.Node, path string, lookup func(string) (string, bool), unset func(line int, key, name string)) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			sub := envRef.FindStringSubmatch(m)
			if v, ok := lookup(sub[1]); ok && v != "" {
				return v
			}
			if sub[2] == "" {
				unset(n.Line, path, sub[1])
			}
			return sub[3]
		})
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandNode(n.Content[i+1], join(path, n.Content[i].Value), lookup, unset)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, fmt.Sprintf("%s[%d]", path, i), lookup, unset)
		}
	default:
		for _, c := range n.Content {
			expandNode(c, path, lookup, unset)
		}
	}
}

var lineRef = regexp.MustCompile(`line (\d+): `)

// decodeErrors splits yaml.v3's decoding error into one error per
// mistake and adds the key path to its "line N: cannot unmarshal"
// messages, which name only the line.
func (c *Config) decodeErrors(err error) []error {
	// A line names the deepest key on it, unless it holds several keys
	// side by side ({a: 1, b: 2}): then the message cannot tell which.
	byLine := map[string]string{}
	ambiguous := map[string]bool{}
	for _, k := range sortedKeys(c.lines) {
		if k == "" {
			continue // the document itself
		}
		l := strconv.Itoa(c.lines[k])
		old, ok := byLine[l]
		switch {
		case !ok || strings.HasPrefix(k, old+".") || strings.HasPrefix(k, old+"["):
			byLine[l] = k
		case !strings.HasPrefix(old, k+".") && !strings.HasPrefix(old, k+"["):
			ambiguous[l] = true
		}
	}
	for l := range ambiguous {
		delete(byLine, l)
	}
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	errs := make([]error, 0, len(msgs))
	for _, msg := range msgs {
		msg = lineRef.ReplaceAllStringFunc(msg, func(m string) string {
			n := lineRef.FindStringSubmatch(m)[1]
			if k, ok := byLine[n]; ok {
				return "line " + n + ": " + k + ": "
			}
			return m
		})
		errs = append(errs, errors.New(msg))
	}
	return errs
}

// lineOf returns the line of key or of its nearest parent, 0 if unknown.
func (c *Config) lineOf(key string) int {
	for key != "" {
		if l, ok := c.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}
