package main

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// TestCryptoInProfile: only samples in the hash and signature code that
// the record's code called count, weighted by their CPU time; an API
// key's SHA-256 (no provenance frame) and the provenance code's own work
// (no crypto frame) do not.
func TestCryptoInProfile(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	funcs := []*profile.Function{
		fn(1, "crypto/internal/fips140/sha256.blockSHANI"),
		fn(2, "github.com/voxgate/voxgate/gateway/provenance.(*Hasher).Write"),
		fn(3, "crypto/internal/fips140/edwards25519/field.feSquare"),
		fn(4, "github.com/voxgate/voxgate/gateway/provenance.(*Signer).SignRecord"),
		fn(5, "github.com/voxgate/voxgate/gateway/admission/auth.hashKey"),
		fn(6, "runtime.memmove"),
	}
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	locs := make([]*profile.Location, len(funcs))
	for i, f := range funcs {
		locs[i] = loc(uint64(i+1), f)
	}
	sample := func(cpu int64, l ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: l, Value: []int64{cpu / 10, cpu}}
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Function: funcs, Location: locs,
		Sample: []*profile.Sample{
			sample(300, locs[0], locs[1]), // the record's hash: counts
			sample(100, locs[2], locs[3]), // its signature: counts
			sample(200, locs[0], locs[4]), // a key's hash: does not
			sample(150, locs[1]),          // the record's own code: does not
			sample(250, locs[5]),          // anything else
		},
	}
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := cryptoInProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := 400.0 / 1000; math.Abs(got-want) > 1e-9 {
		t.Errorf("share %v, want %v", got, want)
	}
	if _, err := cryptoInProfile(filepath.Join(t.TempDir(), "none")); err == nil || errors.Is(err, errEmptyProfile) {
		t.Errorf("a missing profile: %v", err)
	}
	// A profile without samples was still taken and read (runWorkload
	// counts it as profiled), and says so.
	p.Sample = nil
	empty := filepath.Join(t.TempDir(), "empty.pprof")
	f, err = os.Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := cryptoInProfile(empty); !errors.Is(err, errEmptyProfile) {
		t.Errorf("an empty profile: %v", err)
	}
}
