package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// recordCost is what a signed provenance record's cryptography alone
// costs one answer, measured in voxbench's own process on the same
// machine in the same run: the SHA-256 of every byte sent and one
// Ed25519 signature of a record-sized message. The gateway's record
// cannot cost less; the clients phase compares what the record adds to a
// request (records on minus records off) with it.
type recordCost struct {
	Bytes    int     `json:"bytes"`
	SHA256US float64 `json:"sha256_us"`
	SignUS   float64 `json:"ed25519_sign_us"`
	// InGatewayUS is the same cryptography as the gateway ran it, per
	// request of the records-on workload: its share of the gateway's CPU
	// profile (cryptoInProfile) times the gateway's CPU per request; 0
	// when the profile could not be taken.
	InGatewayUS    float64 `json:"in_gateway_us,omitempty"`
	InGatewayShare float64 `json:"in_gateway_share,omitempty"`
	// Profiled says the profile was taken and read, even if its few
	// samples (a -quick run's 0.3 s slot) held none of the record's, or
	// it held none at all (errEmptyProfile).
	Profiled bool `json:"in_gateway_profiled"`
}

func (c recordCost) total() float64 { return c.SHA256US + c.SignUS }

// recordMessageBytes is about the size of a signed record's JSON (the
// message Ed25519 signs; gateway/provenance Record).
const recordMessageBytes = 700

// measureRecordCost times the SHA-256 of n bytes and one signature, each
// for about d, and returns the mean per call.
func measureRecordCost(n int, d time.Duration) recordCost {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	per := func(f func()) float64 {
		f() // warm
		start, calls := time.Now(), 0
		for time.Since(start) < d {
			f()
			calls++
		}
		return float64(time.Since(start).Microseconds()) / float64(calls)
	}
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	msg := buf[:min(n, recordMessageBytes)]
	var sink byte
	c := recordCost{Bytes: n}
	c.SHA256US = per(func() { s := sha256.Sum256(buf); sink ^= s[0] })
	c.SignUS = per(func() { s := ed25519.Sign(key, msg); sink ^= s[0] })
	_ = sink
	return c
}

// cryptoInProfile is the share of a CPU profile's samples (the file at
// path, as /debug/pprof/profile writes it) whose stack is in the
// SHA-256, SHA-512 or Ed25519 code of Go's crypto: what a signed record's
// cryptography cost inside the gateway, under the load that profiled it.
// Multiplied by the gateway's CPU per request it is the record's
// cryptography as the gateway paid it; what the record adds beyond that
// is its own work (the record's JSON, the hand-over to a sealer, the
// longer row).
//
// Why both this and recordCost: the same SHA-256 and signature run slower
// in the gateway under the clients phase's load than in voxbench's own
// process with the machine otherwise idle (both cores busy, a shared
// host's clock and caches; 1.1x to 1.3x in round 3 session 8's runs), so
// a target set against the idle figure counts that slowdown as the
// gateway's own overhead.
func cryptoInProfile(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return 0, fmt.Errorf("%s: no cpu samples", path)
	}
	var all, crypto int64
	for _, s := range p.Sample {
		v := s.Value[cpu]
		all += v
		if inCrypto(s) {
			crypto += v
		}
	}
	if all == 0 {
		return 0, fmt.Errorf("%s: %w", path, errEmptyProfile)
	}
	return float64(crypto) / float64(all), nil
}

// errEmptyProfile is a profile without a sample: on a loaded machine a
// -quick run's one-second profile can start after its short slots ended.
// The profile was still taken and read; there is just nothing in it.
var errEmptyProfile = errors.New("empty profile (no samples)")

// cryptoPackages are the packages of a record's hash and signature
// (Ed25519 hashes with SHA-512; edwards25519's field arithmetic is a
// package of its own, edwards25519/field).
var cryptoPackages = []string{"crypto/internal/fips140/sha256.", "crypto/internal/fips140/sha512.",
	"crypto/internal/fips140/ed25519.", "crypto/internal/fips140/edwards25519.", "crypto/internal/fips140/edwards25519/field."}

// provenancePackage is the gateway's record code: a sample is the
// record's cryptography only when called from it (an API key's hash is
// SHA-256 too).
const provenancePackage = "github.com/voxgate/voxgate/gateway/provenance."

// inCrypto reports whether sample s is in a record's cryptography: a
// frame of its stack is in one of cryptoPackages, called from
// provenancePackage.
func inCrypto(s *profile.Sample) bool {
	var crypto, prov bool
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			prov = prov || strings.HasPrefix(name, provenancePackage)
			for _, pkg := range cryptoPackages {
				crypto = crypto || strings.HasPrefix(name, pkg)
			}
		}
	}
	return crypto && prov
}
