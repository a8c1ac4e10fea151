package bolt

import (
	"context"
	"fmt"

	"go.etcd.io/bbolt"
)

// Enumeration for copying a file elsewhere (voxgate migrate). The request
// path never needs it: every API call names its organization.

// Orgs returns the organizations that have data in the file, in byte order.
func (s *Store) Orgs(ctx context.Context) ([]string, error) {
	var out []string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(bucketOrgs)).ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list organizations: %w", err)
	}
	return out, nil
}

// MediaIDs returns the ids of orgID's media, in byte order.
func (s *Store) MediaIDs(ctx context.Context, orgID string) ([]string, error) {
	var out []string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := orgBucket(tx, orgID, bucketMedia)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list media of %q: %w", orgID, err)
	}
	return out, nil
}

// JobOrgs returns the organizations that have long-form jobs in the file,
// in byte order. Orgs does not name them all: a job is kept in buckets of
// its own, so an organization declared in gateway.yaml that made a job and
// nothing else has no organization bucket.
func (s *Store) JobOrgs(ctx context.Context) ([]string, error) {
	var out []string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketJobsByOrg))
		if b == nil {
			return nil
		}
		return b.ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list organizations with jobs: %w", err)
	}
	return out, nil
}
