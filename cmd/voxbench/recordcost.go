package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"time"
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
