// Package api holds the end-to-end tests of the native HTTP API: authentication and
// key scopes, voices, media, logs, usage, budgets and rate limits,
// moderation, CORS (from a headless browser's fetch too), the edge's
// refusal of unstorable text, and the public JS client run against it.
package api
