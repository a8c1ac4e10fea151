// Package provenance holds the end-to-end tests of provenance: the marks
// ffprobe reads in every format, the signed records and their keys,
// checked with openssl too, consent for cloned voices, and identifying
// re-encoded audio.
package provenance
