package store

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

// The request-id indexes grow at their end only if ids made later sort
// later (as strings: that is how every driver keys them).
func TestNewRequestIDIsTimeOrdered(t *testing.T) {
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = NewRequestID()
	}
	if !slices.IsSorted(ids) {
		t.Fatal("request ids made one after another do not sort in order")
	}
	u, err := uuid.Parse(ids[0])
	if err != nil || u.Version() != 7 {
		t.Fatalf("request id %q: version %v, err %v; want a UUIDv7", ids[0], u.Version(), err)
	}
}

// AppendRequestID writes what uuid.UUID.String writes for the same id.
func TestAppendRequestIDIsCanonical(t *testing.T) {
	for range 100 {
		b := AppendRequestID([]byte("x"))
		u, err := uuid.Parse(string(b[1:]))
		if err != nil || b[0] != 'x' || u.Version() != 7 || u.String() != string(b[1:]) {
			t.Fatalf("%q: %v (version %v, canonical %q)", b, err, u.Version(), u.String())
		}
	}
}
