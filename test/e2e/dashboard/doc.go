// Package dashboard holds the end-to-end tests of the dashboard: its session API and
// the app itself driven in headless chromium.
package dashboard
