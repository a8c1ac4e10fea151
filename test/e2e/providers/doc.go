// Package providers holds the end-to-end tests of what stands between a request and
// its provider: fallbacks, the response cache, direct HTTP for planning
// plugins, and provider key pools.
package providers
