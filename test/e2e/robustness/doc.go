// Package robustness holds the end-to-end tests of the edge under bad clients and
// failures: malformed or oversized bodies, bodies that stop arriving,
// broken streams, dying plugins, shutdowns and a full disk.
package robustness
