package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// CORS says which browser origins may call the API (none by default).
type CORS struct {
	// AllowedOrigins lists origins as a browser sends them
	// ("https://app.example.com", "http://localhost:3000"), or "*" for
	// any origin. API keys travel in headers, never cookies, so an
	// allowed origin gains nothing a page could not do with its key.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// MaxAge is how long a browser may cache a preflight answer
	// (default 10m; browsers cap it, Chromium at 2h).
	MaxAge Duration `yaml:"max_age"`
}

func (c *CORS) defaults() {
	if c.MaxAge == 0 {
		c.MaxAge = Duration(10 * time.Minute)
	}
}

// validateCORS checks the cors section.
func (c *Config) validateCORS(bad report) {
	for i, o := range c.CORS.AllowedOrigins {
		if msg := checkOrigin(o); msg != "" {
			bad(fmt.Sprintf("cors.allowed_origins[%d]", i), "%q %s", o, msg)
		}
	}
	if c.CORS.MaxAge.D() > 24*time.Hour {
		bad("cors.max_age", "must be at most 24h, got %s", c.CORS.MaxAge.D())
	}
}

// checkOrigin returns what is wrong with an allowed origin, "" if
// nothing: a browser's Origin is scheme://host[:port], without a path.
func checkOrigin(o string) string {
	if o == "*" {
		return ""
	}
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return "is not a URL: " + err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "must start with http:// or https://"
	case u.Host == "":
		return "has no host"
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "must be scheme://host[:port] only, as a browser sends it (no path, query or user)"
	case strings.ToLower(o) != o:
		return "must be lower case, as a browser sends it"
	}
	return ""
}
