package config

// Storage selects the storage backend and tunes the request-log writer.
type Storage struct {
	// Driver is "bolt" (one bbolt file, the single-machine default),
	// "postgres" (shared by several instances) or "memory" (nothing kept
	// past the process: for tests and trying the gateway out).
	Driver string `yaml:"driver"`
	// Path is the bbolt file (driver bolt). With driver postgres it still
	// places the admin socket and the default secrets key file.
	Path string `yaml:"path"`
	// DSN is the PostgreSQL connection string (driver postgres), usually
	// "${DATABASE_URL}". It holds a password, so it is a Secret.
	DSN Secret `yaml:"dsn"`
	// MaxConns bounds the PostgreSQL connection pool (default 16).
	MaxConns      int `yaml:"max_conns"`
	LogQueueSize  int `yaml:"log_queue_size"`
	LogBatchSize  int `yaml:"log_batch_size"`
	LogRetainDays int `yaml:"log_retain_days"`
}

// Storage drivers.
const (
	DriverBolt     = "bolt"
	DriverPostgres = "postgres"
	DriverMemory   = "memory"
)

// Secrets holds where the key that encrypts stored BYOK keys comes from.
type Secrets struct {
	// KeyEnv names an environment variable holding a base64 32-byte key.
	KeyEnv string `yaml:"key_env"`
	// KeyFile is a file holding the key; created (0600) when missing.
	KeyFile string `yaml:"key_file"`
}

func (s *Storage) defaults() {
	if s.Driver == "" {
		s.Driver = DriverBolt
	}
	if s.Path == "" {
		s.Path = "./data/voxgate.db"
	}
	if s.MaxConns == 0 {
		s.MaxConns = 16
	}
	if s.LogQueueSize == 0 {
		s.LogQueueSize = 8192
	}
	if s.LogBatchSize == 0 {
		s.LogBatchSize = 512
	}
	if s.LogRetainDays == 0 {
		s.LogRetainDays = 30
	}
}

// validateStorage checks the storage section.
func (c *Config) validateStorage(bad report) {
	if c.Storage.LogQueueSize < 1 || c.Storage.LogBatchSize < 1 {
		bad("storage", "log_queue_size and log_batch_size must be positive")
	}
	switch c.Storage.Driver {
	case DriverBolt, DriverMemory:
	case DriverPostgres:
		if c.Storage.DSN == "" {
			bad("storage.dsn", "is required with driver postgres (e.g. ${DATABASE_URL})")
		}
	default:
		bad("storage.driver", "must be %q, %q or %q, got %q", DriverBolt, DriverPostgres, DriverMemory, c.Storage.Driver)
	}
	if c.Storage.MaxConns < 1 {
		bad("storage.max_conns", "must be positive, got %d", c.Storage.MaxConns)
	}
	if c.Storage.LogRetainDays < 1 || c.Storage.LogRetainDays > 3650 {
		bad("storage.log_retain_days", "must be 1..3650 (days), got %d", c.Storage.LogRetainDays)
	}
}
