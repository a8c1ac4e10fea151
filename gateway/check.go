package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/postgres"
)

// Check is the full check of a configuration that `voxgate config check`
// runs and a reload runs before swapping a configuration in: Preflight
// (what the machine must offer), then every provider block's settings as
// its plugin judges them (CheckProviderSettings), then the secrets key
// against the store's fingerprint when the store can be reached
// (CheckSecretsKey), and the provenance signing key against the one the
// store records (CheckSigningKey). It returns every mistake (errors.Join, each naming
// the config key and, for settings, its line) and warnings (plugins that
// cannot check their settings). log may be nil.
func Check(ctx context.Context, cfg *config.Config, log *zap.Logger) (warnings []string, err error) {
	var errs []error
	if err := Preflight(cfg); err != nil {
		errs = append(errs, unjoinErr(err)...)
	}
	w, settingsErrs := CheckProviderSettings(ctx, cfg, log)
	warnings = append(warnings, w...)
	errs = append(errs, settingsErrs...)
	if err := CheckSecretsKey(ctx, cfg); err != nil {
		errs = append(errs, err)
	}
	if err := CheckSigningKey(ctx, cfg); err != nil {
		errs = append(errs, err)
	}
	return warnings, errors.Join(errs...)
}

// CheckProviderSettings starts each provider's (and moderation) plugin
// once, concurrently, asks it to check its block's settings
// (sdk.SettingsValidator) and stops it. Mistakes come back naming their
// lines, in file order; a plugin that cannot check its settings gives a
// warning. A plugin whose binary is missing is skipped (Preflight names
// it).
func CheckProviderSettings(ctx context.Context, cfg *config.Config, log *zap.Logger) (warnings []string, errs []error) {
	opts := PluginHostOptions(cfg)
	opts.Logger = log
	type block struct {
		key    string // "providers.openai"
		plugin string
		spec   pluginhost.Spec
	}
	var blocks []block
	for _, name := range sortedKeys(cfg.Providers) {
		if p := cfg.Providers[name]; p != nil && p.Plugin != "" {
			blocks = append(blocks, block{"providers." + name, p.Plugin,
				pluginhost.Spec{Name: name, Kind: pluginhost.KindProvider, Path: pluginPath(cfg, p.Plugin), Settings: p.Settings}})
		}
	}
	for _, name := range sortedKeys(cfg.Moderation.Plugins) {
		if m := cfg.Moderation.Plugins[name]; m != nil && m.Plugin != "" {
			blocks = append(blocks, block{"moderation.plugins." + name, m.Plugin,
				pluginhost.Spec{Name: "moderation." + name, Kind: pluginhost.KindModerator, Path: pluginPath(cfg, m.Plugin), Settings: m.Settings}})
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range blocks {
		if checkExecutable(b.spec.Path) != nil {
			continue
		}
		wg.Go(func() {
			problems, checked, err := pluginhost.CheckSettings(ctx, b.spec, opts)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s.plugin: the plugin did not start to check its settings: %v", b.key, err))
			case !checked:
				warnings = append(warnings, fmt.Sprintf("%s: plugin %s cannot check its settings (built before sdk.SettingsValidator); they are checked when it starts", b.key, b.plugin))
			default:
				errs = append(errs, cfg.SettingProblems(b.key, problems)...)
			}
		})
	}
	wg.Wait()
	config.SortByLine(errs)
	slices.Sort(warnings)
	return warnings, errs
}

// settingsErrors rewrites the plugins' verdicts on their settings in a
// start error (pluginhost.SettingsError) as config mistakes naming their
// lines, all at once; any other error is kept as it is.
func settingsErrors(cfg *config.Config, err error) error {
	var out []error
	found := false
	for _, e := range unjoinErr(err) {
		var se *pluginhost.SettingsError
		if !errors.As(e, &se) {
			out = append(out, e)
			continue
		}
		found = true
		block := "providers." + se.Plugin
		if name, ok := strings.CutPrefix(se.Plugin, "moderation."); ok {
			block = "moderation.plugins." + name
		}
		out = append(out, cfg.SettingProblems(block, se.Problems)...)
	}
	if !found {
		return err
	}
	config.SortByLine(out)
	return &config.Errors{Errs: out}
}

// unjoinErr splits an errors.Join error into its parts.
func unjoinErr(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// OpenSealer loads the secrets key for a gateway or CLI that has st open
// and checks it against the fingerprint st records (the secrets key
// guard): a key file is made only for a store that holds no secrets and
// records no fingerprint, a named secrets.key_env that is not set is an
// error, and a key other than the one that sealed st's secrets is
// refused, naming where it came from.
func OpenSealer(ctx context.Context, cfg *config.Config, st credentials.SealStore) (*credentials.Sealer, error) {
	fp, has, err := st.SealFingerprint(ctx)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	key, source, err := credentials.LoadKey(cfg.Secrets.KeyEnv, SecretsKeyFile(cfg), fp == nil && !has)
	if err != nil {
		return nil, err
	}
	if err := credentials.CheckKey(ctx, st, key, source); err != nil {
		return nil, err
	}
	s, err := credentials.NewSealer(key)
	if err != nil {
		return nil, err
	}
	s.WithSource(source)
	if fp == nil && has {
		// Secrets sealed before fingerprints were recorded (or copied by
		// `voxgate migrate`): the key must open one of them before its
		// fingerprint is recorded for good.
		if err := adoptKey(ctx, cfg, st, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// adoptKey opens the first stored provider key of a configured
// organization with s and, when it opens, records s's fingerprint; a key
// that cannot open it is refused. With no such key to try (only
// organizations made outside the file hold secrets) nothing is recorded:
// the next sealed write records it.
func adoptKey(ctx context.Context, cfg *config.Config, st credentials.SealStore, s *credentials.Sealer) error {
	secrets, ok := st.(credentials.Secrets)
	if !ok {
		return nil
	}
	for _, org := range sortedKeys(cfg.Orgs) {
		names, err := secrets.ListSecretNames(ctx, org)
		if err != nil {
			return fmt.Errorf("secrets key: %w", err)
		}
		for _, n := range names {
			provider, ok := strings.CutPrefix(n, credentials.SecretName(""))
			if !ok {
				continue
			}
			if _, err := credentials.LoadBYOK(ctx, secrets, s, org, provider); err != nil {
				return fmt.Errorf("%w: the secrets key from %s cannot open the stored %s key of organization %s: %v", credentials.ErrWrongKey, s.Source(), provider, org, err)
			}
			_, err := st.RecordSealFingerprint(ctx, s.Fingerprint())
			return err
		}
	}
	return nil
}

// CheckSecretsKey checks the secrets key against the fingerprint the
// store records, when the store can be read without changing it (a bbolt
// file no gateway holds, a PostgreSQL server that answers within a few
// seconds): the key `serve` would use must be the one that sealed the
// store's secrets, and a missing key file is an error once the store
// holds secrets. A store that cannot be reached is not an error here
// (Preflight and a start say what they can); neither is a malformed key,
// which Preflight names.
func CheckSecretsKey(ctx context.Context, cfg *config.Config) error {
	var fp []byte
	var has bool
	var err error
	switch cfg.Storage.Driver {
	case config.DriverBolt:
		fp, has, err = bolt.PeekSealFingerprint(cfg.Resolve(cfg.Storage.Path))
	case config.DriverPostgres:
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fp, has, err = postgres.PeekSealFingerprint(pctx, cfg.Storage.DSN.Value())
		cancel()
	default:
		return nil // memory: nothing outlives the process
	}
	if err != nil {
		return nil // not reachable: nothing to compare with
	}
	keyFile := SecretsKeyFile(cfg)
	if cfg.Secrets.KeyEnv == "" {
		if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
			if fp == nil && !has {
				return nil // the key file is made at the first start
			}
			return fmt.Errorf("secrets.key_file: %s does not exist, but the store holds provider keys sealed with a key: restore that key file (or give the key with secrets.key_env); a start would refuse to make a new one", keyFile)
		}
	}
	key, source, err := credentials.LoadKey(cfg.Secrets.KeyEnv, keyFile, false)
	if err != nil {
		return nil // Preflight names it
	}
	if fp == nil {
		return nil
	}
	if err := credentials.CheckKey(ctx, staticSeal{fp, has}, key, source); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return nil
}

// CheckSigningKey is the provenance signing key guard a start meets
// (Signer.CheckKey in openProvenance), checked without making a key file
// or recording anything: the key `serve` would load must be the one whose
// fingerprint the store records, unless provenance.rotate_key is set, and
// a missing key file (which a start would make anew, with a new key) is
// an error once the store records a key. An unset provenance.key_env or a
// malformed key is refused as a start refuses it. A store that cannot be
// read without disturbing it (a bbolt file a gateway holds, a PostgreSQL
// server that does not answer within a few seconds) is not an error here.
func CheckSigningKey(ctx context.Context, cfg *config.Config) error {
	keyFile := ProvenanceKeyFile(cfg)
	if cfg.Provenance.KeyEnv == "" {
		if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
			recorded, err := peekSigningKey(ctx, cfg)
			if err != nil || recorded == nil || cfg.Provenance.RotateKey {
				return nil // the key file is made at start, and recorded
			}
			return fmt.Errorf("provenance.key_file: %s does not exist, but the store records the key that signed its records (key id %s): "+
				"a start would make a new key and refuse it; restore that key file (or give the key with provenance.key_env); "+
				"to change the key on purpose, start once with provenance.rotate_key: true and keep the old public key to check the old records",
				keyFile, provenance.FingerprintKeyID(recorded))
		}
	}
	seed, source, err := provenance.LoadSeed(cfg.Provenance.KeyEnv, keyFile)
	if err != nil {
		return err // what a start says: the variable is not set, or the key is malformed
	}
	signer, err := provenance.NewSigner(seed)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	recorded, err := peekSigningKey(ctx, cfg)
	if err != nil {
		return nil // not reachable: nothing to compare with
	}
	return signer.CheckKey(ctx, staticSigningKey(recorded), source, cfg.Provenance.RotateKey)
}

// peekSigningKey reads the signing key fingerprint the store records
// without changing the store; memory stores record none.
func peekSigningKey(ctx context.Context, cfg *config.Config) ([]byte, error) {
	switch cfg.Storage.Driver {
	case config.DriverBolt:
		return bolt.PeekSigningKey(cfg.Resolve(cfg.Storage.Path))
	case config.DriverPostgres:
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return postgres.PeekSigningKey(pctx, cfg.Storage.DSN.Value())
	}
	return nil, nil // memory: nothing outlives the process
}

// staticSigningKey is a SigningKeyStore that answers what was read and
// records nothing: with no fingerprint recorded, or with replace, the
// offered one is what a start would record.
type staticSigningKey []byte

func (s staticSigningKey) RecordSigningKey(_ context.Context, fingerprint []byte, replace bool) ([]byte, error) {
	if s == nil || replace {
		return fingerprint, nil
	}
	return s, nil
}

// staticSeal is a SealStore that answers what was read.
type staticSeal struct {
	fp  []byte
	has bool
}

func (s staticSeal) SealFingerprint(context.Context) ([]byte, bool, error) { return s.fp, s.has, nil }
func (s staticSeal) RecordSealFingerprint(context.Context, []byte) ([]byte, error) {
	return s.fp, nil
}
