package config

import "strings"

// Shared configures what several gateway instances share besides storage.
type Shared struct {
	// RedisURL is a redis:// URL; with it, per-org rate limits hold across
	// every instance that uses the same Redis. Usually "${REDIS_URL}".
	RedisURL Secret `yaml:"redis_url"`
	// RateLimitOnError says what a request gets when Redis cannot be
	// asked: "allow" (the default: a limiter outage must not become a
	// speech outage) or "deny" (429).
	RateLimitOnError string `yaml:"rate_limit_on_error"`
	// BudgetOnError says what a request gets when the shared budget
	// counter cannot be asked: "deny" (the default: a budget that cannot
	// be checked is not spent, 503 budget_unavailable) or "allow".
	BudgetOnError string `yaml:"budget_on_error"`
}

// validateShared checks the shared section.
func (c *Config) validateShared(bad report) {
	switch c.Shared.RateLimitOnError {
	case "", "allow", "deny":
	default:
		bad("shared.rate_limit_on_error", "must be allow or deny, got %q", c.Shared.RateLimitOnError)
	}
	switch c.Shared.BudgetOnError {
	case "", "allow", "deny":
	default:
		bad("shared.budget_on_error", "must be allow or deny, got %q", c.Shared.BudgetOnError)
	}
	if u := c.Shared.RedisURL.Value(); u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		bad("shared.redis_url", "must be a redis:// or rediss:// URL")
	}
}
