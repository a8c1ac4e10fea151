// Package cluster holds the end-to-end tests of gateways that share PostgreSQL and
// Redis: outages of either, and a drain seen through /readyz.
package cluster
