// Package alignment holds the end-to-end tests of timestamps (native,
// aligned to the audio, or from speech-to-text) and of long texts split
// into pieces and joined again. Its long texts are the suite's heaviest
// requests, in a package of their own so that go test runs them beside
// the rest.
package alignment
