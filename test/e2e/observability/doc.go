// Package observability holds the end-to-end tests of /metrics and of traces
// exported over OTLP.
package observability
