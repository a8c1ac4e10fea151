// Package admin tests the admin API (/v1/admin/) end to end: admin keys
// and what they may call, organizations and API keys made, changed,
// disabled and revoked over HTTP and applied with no restart, bad
// inputs, and per-key limits, against a real gateway on a bbolt file
// with the real plugins.
package admin
