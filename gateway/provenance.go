package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/store"
)

// ProvenanceKeyFile is the file of the Ed25519 key that signs provenance
// records (when provenance.key_env is not named): provenance.key_file,
// or provenance.key beside the database.
func ProvenanceKeyFile(cfg *config.Config) string {
	if cfg.Provenance.KeyFile != "" {
		return cfg.Resolve(cfg.Provenance.KeyFile)
	}
	return filepath.Join(filepath.Dir(cfg.Resolve(cfg.Storage.Path)), "provenance.key")
}

// ProvenanceGateway is the identity marks and records carry:
// provenance.gateway, or the host name.
func ProvenanceGateway(cfg *config.Config) string {
	if cfg.Provenance.Gateway != "" {
		return cfg.Provenance.Gateway
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "voxgate"
}

// openProvenance loads the signing key and returns the service that
// marks, signs and indexes answers.
func openProvenance(ctx context.Context, cfg *config.Config, st store.SigningKeyStore, index *provenance.Index) (*provenance.Service, error) {
	seed, source, err := provenance.LoadSeed(cfg.Provenance.KeyEnv, ProvenanceKeyFile(cfg))
	if err != nil {
		return nil, err
	}
	signer, err := provenance.NewSigner(seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := signer.CheckKey(ctx, st, source, cfg.Provenance.RotateKey); err != nil {
		return nil, err
	}
	return provenance.NewService(signer, ProvenanceGateway(cfg), index), nil
}
