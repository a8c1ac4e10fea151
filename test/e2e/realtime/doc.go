// Package realtime holds the end-to-end tests of the realtime WebSocket: contexts,
// timestamps, cancels, moderation, bridges to a provider's own socket, and
// back-pressure on a client that stops reading.
package realtime
