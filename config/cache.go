package config

import "time"

// Cache configures the response cache.
type Cache struct {
	// Driver is "off" (the default), "disk" (one machine) or "redis"
	// (shared by instances, at shared.redis_url).
	Driver string `yaml:"driver"`
	// Path is the disk cache's directory (default: cache/ beside the
	// storage file).
	Path string `yaml:"path"`
	// MaxBytes bounds the disk cache (default 1 GiB); MaxEntryBytes one
	// entry in either (default 32 MiB).
	MaxBytes      int64 `yaml:"max_bytes"`
	MaxEntryBytes int64 `yaml:"max_entry_bytes"`
	// TTL is how long an entry is served (default 24h).
	TTL Duration `yaml:"ttl"`
	// ShareManaged shares entries of requests made with the gateway's
	// own provider credentials across organizations.
	ShareManaged bool `yaml:"share_managed"`
}

// Cache drivers.
const (
	CacheOff   = "off"
	CacheDisk  = "disk"
	CacheRedis = "redis"
)

func (c *Cache) defaults() {
	if c.Driver == "" {
		c.Driver = CacheOff
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 30
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = 32 << 20
	}
	if c.TTL == 0 {
		c.TTL = Duration(24 * time.Hour)
	}
}

// validateCache checks the cache section.
func (c *Config) validateCache(bad report) {
	switch c.Cache.Driver {
	case CacheOff, CacheDisk:
	case CacheRedis:
		if c.Shared.RedisURL.Value() == "" {
			bad("cache.driver", "redis needs shared.redis_url")
		}
	default:
		bad("cache.driver", "must be off, disk or redis, got %q", c.Cache.Driver)
	}
	if c.Cache.MaxBytes < 0 || c.Cache.MaxEntryBytes < 0 || c.Cache.TTL < 0 {
		bad("cache", "max_bytes, max_entry_bytes and ttl must not be negative")
	}
}
