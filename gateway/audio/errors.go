package audio

import (
	"errors"
	"strings"
)

// Errors of this package. Functions wrap them with %w and add detail, so
// callers test with errors.Is and map them to problem codes at the edge:
// ErrUnsupportedMediaType and ErrCorrupt describe the provider's audio (a
// 502 provider_error for a speech request), ErrInvalidParams the caller's
// whole-clip parameters (a 400 validation_failed).
var (
	// ErrUnsupportedMediaType means the media type is not one Decode reads,
	// or lacks a parameter it needs (the rate of raw PCM).
	ErrUnsupportedMediaType = errors.New("audio: unsupported media type")
	// ErrCorrupt means the bytes do not hold audio of the declared type:
	// a broken RIFF header, an undecodable MP3 frame, a missing data chunk.
	ErrCorrupt = errors.New("audio: corrupt audio data")
	// ErrInvalidParams means a whole-clip parameter is out of range: an
	// unknown output format, a sample rate or bitrate the encoder cannot
	// produce. *ValidationError wraps it with the per-field details.
	ErrInvalidParams = errors.New("audio: invalid parameters")
	// ErrOutputTooLarge means the processed clip would be longer or larger
	// than the Limits allow (a 422 output_too_large): the caller asked
	// for more audio than the gateway returns in one answer.
	ErrOutputTooLarge = errors.New("audio: output too large")
)

// FieldError is one problem with one field of the request's whole-clip
// parameters. Path names the field from the request body's root, e.g.
// ["output", "bitrate"]; the gateway turns it into the problem's
// validation entry. It carries no HTTP notions.
type FieldError struct {
	// Path is the JSON path of the field, one element per level.
	Path []string
	// Message says what is wrong, in a sentence meant for the API user.
	Message string
}

// Error renders the path dotted, then the message.
func (e FieldError) Error() string {
	return strings.Join(e.Path, ".") + ": " + e.Message
}

// ValidationError carries every FieldError found in a Params value. It
// matches ErrInvalidParams under errors.Is.
type ValidationError struct {
	// Fields lists the problems in the order the fields were checked.
	Fields []FieldError
}

// Error joins the field errors with "; ".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return ErrInvalidParams.Error() + ": " + strings.Join(parts, "; ")
}

// Unwrap returns ErrInvalidParams, so errors.Is(err, ErrInvalidParams) holds.
func (e *ValidationError) Unwrap() error { return ErrInvalidParams }
