// Package speech holds the end-to-end tests of synthesis through the real eSpeak
// and test-kit plugins: clips, streams, output formats and their
// negotiation, stream transcoding, audio tags, conversations, slow
// streams and plugin crashes.
package speech
