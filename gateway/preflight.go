package gateway

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/voxgate/voxgate/config"
)

// maxSocketPath is the longest unix socket path Linux binds (sun_path is
// 108 bytes with the terminating NUL); macOS allows 104.
const maxSocketPath = 103

// Preflight checks what Open and Start need from the machine, without
// starting, creating or connecting to anything: the plugin binaries, the
// storage location, the jobs folder, the secrets key, the shared Redis
// URL and the admin socket. It returns every problem found (errors.Join), each naming the
// config key to fix. `voxgate config check` runs it, and Open runs it
// first, so a start that cannot succeed stops before it changes anything
// (storage is not opened, no development key is made).
//
// What only a start can tell (a port already in use, a database that
// does not answer, a plugin that crashes) is left to Open and Start.
func Preflight(cfg *config.Config) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	for _, name := range sortedKeys(cfg.Providers) {
		if p := cfg.Providers[name]; p != nil && p.Plugin != "" {
			if err := checkExecutable(pluginPath(cfg, p.Plugin)); err != nil {
				bad("providers."+name+".plugin", "%v", err)
			}
		}
	}
	for _, name := range sortedKeys(cfg.Moderation.Plugins) {
		if m := cfg.Moderation.Plugins[name]; m != nil && m.Plugin != "" {
			if err := checkExecutable(pluginPath(cfg, m.Plugin)); err != nil {
				bad("moderation.plugins."+name+".plugin", "%v", err)
			}
		}
	}
	switch cfg.Storage.Driver {
	case config.DriverBolt:
		if err := checkWritableFile(cfg.Resolve(cfg.Storage.Path)); err != nil {
			bad("storage.path", "%v", err)
		}
	case config.DriverPostgres:
		// The parse error could quote the DSN, password included: say
		// only that it does not parse.
		if _, err := pgconn.ParseConfig(cfg.Storage.DSN.Value()); err != nil && cfg.Storage.DSN != "" {
			bad("storage.dsn", "is not a PostgreSQL connection URL (postgres://user:password@host:5432/db)")
		}
	}
	// Every driver keeps long-form jobs' audio in jobs.dir, made at the
	// first job: a folder the gateway cannot write fails every job, long
	// after the start.
	if err := checkWritableDir(JobsDir(cfg)); err != nil {
		jobsDir := "jobs.dir"
		if cfg.Jobs.Dir == "" {
			jobsDir = "jobs.dir (not set: jobs/ beside storage.path)"
		}
		bad(jobsDir, "%v: no long-form job could be rendered; give the gateway's user a folder it can write there (mkdir, chown, chmod), or set jobs.dir to one it can", err)
	}
	if err := checkSecretsKey(cfg); err != nil {
		errs = append(errs, err)
	}
	if u := cfg.Shared.RedisURL.Value(); u != "" {
		if _, err := redis.ParseURL(u); err != nil {
			bad("shared.redis_url", "is not a redis:// URL the client accepts")
		}
	}
	if sock := AdminSocket(cfg); len(sock) > maxSocketPath {
		key := "admin.socket"
		if cfg.Admin.Socket == "" {
			key = "storage.path"
		}
		bad(key, "the admin socket %s is %d bytes long; unix sockets allow %d: set admin.socket to a shorter path", sock, len(sock), maxSocketPath)
	}
	return errors.Join(errs...)
}

// checkExecutable reports why path is not a program the gateway can run.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("binary %s not found (run `make build`, or check plugins.dir)", path)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a plugin binary", path)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable (chmod +x)", path)
	}
	return nil
}

// checkWritableFile reports why the gateway could not open path for
// writing, creating it and its directories if missing.
func checkWritableFile(path string) error {
	fi, err := os.Stat(path)
	if err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		if unix.Access(path, unix.W_OK) != nil {
			return fmt.Errorf("%s is not writable by this user", path)
		}
		return nil
	}
	if !missing(err) {
		return err
	}
	// The file and maybe its directories are made at start.
	return checkCreatable(path)
}

// checkCreatable reports why this user could not create path, which does
// not exist, and the directories above it that do not: the nearest
// directory that exists must let this user create entries.
func checkCreatable(path string) error {
	dir := filepath.Dir(path)
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory, so %s cannot be created", dir, path)
			}
			if unix.Access(dir, unix.W_OK|unix.X_OK) != nil {
				return fmt.Errorf("cannot create %s: directory %s is not writable by this user", path, dir)
			}
			return nil
		}
		if !missing(err) {
			return err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return fmt.Errorf("cannot create %s: no existing parent directory", path)
		}
		dir = parent
	}
}

// missing reports whether a stat failed because the path does not exist:
// a name that is not there, or one under a file (ENOTDIR), which
// checkCreatable names.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)
}

// checkWritableDir reports why the gateway could not make files in the
// folder path: an existing folder must be writable, a missing one
// creatable (it is made, with its parents, at the first job).
func checkWritableDir(path string) error {
	fi, err := os.Stat(path)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", path)
		}
		if unix.Access(path, unix.W_OK|unix.X_OK) != nil {
			return fmt.Errorf("%s is not writable by this user", path)
		}
		return nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%s cannot be reached by this user (a folder above it does not let it in)", path)
	}
	if !missing(err) {
		return err
	}
	return checkCreatable(path) // made at the first use
}

// checkSecretsKey checks the key that seals stored provider keys, as
// credentials.LoadKey would load it, without creating the file.
func checkSecretsKey(cfg *config.Config) error {
	if env := cfg.Secrets.KeyEnv; env != "" {
		if v := os.Getenv(env); v != "" {
			k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
			if err != nil || len(k) != 32 {
				return fmt.Errorf("secrets.key_env: $%s must hold a base64-encoded 32-byte key (e.g. `openssl rand -base64 32`)", env)
			}
			return nil
		}
		return fmt.Errorf("secrets.key_env: names $%s, which is not set: set it to the deployment's secrets key (base64 of 32 bytes, the same on every instance); no key file is made when key_env is named", env)
	}
	keyFile, key := SecretsKeyFile(cfg), "secrets.key_file"
	data, err := os.ReadFile(keyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := checkWritableFile(keyFile); err != nil {
			return fmt.Errorf("%s: the key file is made at first start, but %v", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%s: %v", key, err)
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data))); err != nil || len(k) != 32 {
		return fmt.Errorf("%s: %s does not hold a base64-encoded 32-byte key", key, keyFile)
	}
	return nil
}

// pluginPath resolves a plugin binary name against plugins.dir.
func pluginPath(cfg *config.Config, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(cfg.Resolve(cfg.Plugins.Dir), name)
}
