package config

import (
	"strings"
	"testing"
)

// TestStorageDrivers: every storage driver is accepted by its name, and
// any other is refused with the list of them.
func TestStorageDrivers(t *testing.T) {
	for _, c := range []struct {
		yaml, want string
	}{
		{"", DriverBolt},
		{"storage: {driver: bolt}\n", DriverBolt},
		{"storage: {driver: postgres, dsn: 'postgres://u@h/db'}\n", DriverPostgres},
		{"storage: {driver: memory}\n", DriverMemory},
	} {
		cfg, err := Parse([]byte(c.yaml+minimal), env(nil))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if cfg.Storage.Driver != c.want {
			t.Errorf("%q: driver %q, want %q", c.yaml, cfg.Storage.Driver, c.want)
		}
	}
	_, err := Parse([]byte("storage: {driver: sqlite}\n"+minimal), env(nil))
	if err == nil || !strings.Contains(err.Error(), `storage.driver: must be "bolt", "postgres" or "memory", got "sqlite"`) {
		t.Errorf("an unknown driver: %v", err)
	}
}
