// Package config loads and validates gateway.yaml.
//
// The file is decoded into typed structs at the edge of the program (strict:
// unknown keys are errors that name the key and its line), `${ENV}`
// references are expanded, defaults are filled in and every value is
// validated before anything starts. Code deeper in the gateway never sees an
// untyped map.
//
// Each section of the file has a file of its own here, holding its types,
// its defaults and its validation (server.go, storage.go, providers.go,
// orgs.go, moderation.go, limits.go, ...); Validate calls the sections'
// checks in turn. parse.go reads the file and reports its mistakes;
// known.go finds the keys no section has.
package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
)

// Config is a whole gateway.yaml.
type Config struct {
	Server     Server               `yaml:"server"`
	Storage    Storage              `yaml:"storage"`
	Shared     Shared               `yaml:"shared"`
	Plugins    Plugins              `yaml:"plugins"`
	Providers  map[string]*Provider `yaml:"providers"`
	Orgs       map[string]*Org      `yaml:"orgs"`
	Moderation Moderation           `yaml:"moderation"`
	Limits     Limits               `yaml:"limits"`
	Alignment  Alignment            `yaml:"alignment"`
	Admin      Admin                `yaml:"admin"`
	Secrets    Secrets              `yaml:"secrets"`
	Cache      Cache                `yaml:"cache"`
	// Fallbacks maps "provider/model" to the targets a request for it
	// falls back to, in order, when its provider fails.
	Fallbacks map[string][]*FallbackTarget `yaml:"fallbacks"`
	Metrics   Metrics                      `yaml:"metrics"`
	Tracing   Tracing                      `yaml:"tracing"`
	CORS      CORS                         `yaml:"cors"`
	Aliases   Aliases                      `yaml:"aliases"`
	// Provenance is the gateway's identity and signing key for
	// provenance marks and records.
	Provenance Provenance `yaml:"provenance"`
	Jobs       Jobs       `yaml:"jobs"`
	// Pricing is the currency and the operator's prices (pricing.go).
	Pricing Pricing `yaml:"pricing"`

	// Dir is the directory of the config file; relative paths in the file
	// are resolved against it.
	Dir string `yaml:"-"`

	// Warnings are things that are allowed but probably not meant, each
	// naming its line and key: a ${VAR} reference to a variable that is
	// not set, say. serve logs them and `config check` prints them.
	Warnings []string `yaml:"-"`

	// lines maps dotted key paths to their line in the file, so that
	// validation errors can point at it.
	lines map[string]int
}

// report records one mistake: the key it is at (Validate adds the key's
// line when the file has it) and what is wrong, as a format and its
// arguments.
type report func(key, format string, args ...any)

// Validate checks values and cross-references, one section after
// another. Errors name the key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		where := key
		if line := c.lineOf(key); line > 0 {
			where = fmt.Sprintf("line %d: %s", line, key)
		}
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	}
	for _, validate := range []func(report){
		c.validateServer,
		c.validateMetrics,
		c.validateTracing,
		c.validateStorage,
		c.validateShared,
		c.validateCache,
		c.validateLimits,
		c.validateAlignment,
		c.validateProviders,
		c.validateModeration,
		c.validateFallbacks,
		c.validateCORS,
		c.validateAliases,
		c.validateOrgs,
		c.validateProvenance,
		c.validateJobs,
		c.validatePricing,
	} {
		validate(bad)
	}
	return errors.Join(errs...)
}

// applyDefaults fills in every value the file leaves out, section by
// section (limits after server, alignment after providers: their
// defaults follow those).
func (c *Config) applyDefaults() {
	c.Cache.defaults()
	c.Server.defaults()
	c.Storage.defaults()
	c.Plugins.defaults()
	for _, p := range c.Providers {
		p.defaults()
	}
	c.Moderation.defaults()
	c.CORS.defaults()
	c.Tracing.defaults()
	c.Limits.defaults(&c.Server)
	c.Jobs.defaults()
	c.Pricing.defaults()
	c.Alignment.defaults(c.Providers)
}

// Resolve returns path relative to the config file's directory unless it
// is absolute.
func (c *Config) Resolve(path string) string {
	if path == "" || filepath.IsAbs(path) || c.Dir == "" {
		return path
	}
	return filepath.Join(c.Dir, path)
}

// validID reports whether s may be a provider's or an organization's id.
func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
