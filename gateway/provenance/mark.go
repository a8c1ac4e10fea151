// Package provenance marks, signs and recognizes the audio the gateway
// sends: a machine-readable statement that the audio is synthetic written
// into the file's own metadata (mark.go and one file per container), a
// record of each answer signed with the gateway's Ed25519 key
// (record.go, key.go), and an acoustic fingerprint of each clip that
// finds its records again after the audio was re-encoded
// (fingerprint.go, index.go).
//
// Marks are inserted into the bytes as they are, never by encoding again:
// the provider's mp3 that passes through untouched gets an ID3v2 tag in
// front of it, a WAV file chunks before its data, a FLAC file a metadata
// block, an Ogg Opus file a new OpusTags packet. The audio after the
// inserted part is the original slice, so a mark costs one small
// allocation whatever the clip's length.
package provenance

import (
	"errors"
	"strings"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
)

// DigitalSourceType is IPTC's term for media made by a trained model
// (http://cv.iptc.org/newscodes/digitalsourcetype/), the value C2PA's
// c2pa.created action and the EU AI Act guidance use for "AI-generated".
const DigitalSourceType = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"

// Field names written into every marked file, the same in every
// container (TXXX descriptions in ID3v2, Vorbis comment names in Ogg Opus
// and FLAC, elements of the iXML chunk in WAV). Named after IPTC's
// DigitalSourceType and C2PA's action vocabulary where one exists; the
// rest say what this gateway knows and carry its name.
const (
	FieldSourceType = "DIGITAL_SOURCE_TYPE" // IPTC digital source type URI
	FieldAction     = "C2PA_ACTION"         // always ActionCreated
	FieldAI         = "AI_GENERATED"        // always "true": for tools that read one flag
	FieldRequestID  = "VOXGATE_REQUEST_ID"
	FieldGateway    = "VOXGATE_GATEWAY"
	FieldProvider   = "VOXGATE_PROVIDER"
	FieldModel      = "VOXGATE_MODEL"
	FieldTime       = "VOXGATE_TIME" // RFC 3339, UTC
	// FieldComment is a one-line human-readable statement, for players
	// that only show a comment.
	FieldComment = "COMMENT"
)

// ActionCreated is the C2PA action of media created from nothing but a
// prompt: the value of FieldAction.
const ActionCreated = "c2pa.created"

// Mark is the statement written into a file.
type Mark struct {
	// RequestID is the request that made the audio.
	RequestID string `json:"request_id"`
	// Gateway names the gateway that made it (server.name, or the host).
	Gateway string `json:"gateway"`
	// Provider and Model rendered it.
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Time is when the answer was made.
	Time time.Time `json:"time"`
	// SourceType is DigitalSourceType.
	SourceType string `json:"digital_source_type"`
}

// Field is one name and value of a mark.
type Field struct{ Name, Value string }

// Fields returns the mark's fields in the order they are written.
func (m *Mark) Fields() []Field {
	ts := m.Time.UTC().Format(time.RFC3339Nano)
	return []Field{
		{FieldSourceType, DigitalSourceType},
		{FieldAction, ActionCreated},
		{FieldAI, "true"},
		{FieldRequestID, m.RequestID},
		{FieldGateway, m.Gateway},
		{FieldProvider, m.Provider},
		{FieldModel, m.Model},
		{FieldTime, ts},
		{FieldComment, m.Comment()},
	}
}

// Comment is the mark as one sentence.
func (m *Mark) Comment() string {
	var b strings.Builder
	b.WriteString("AI-generated synthetic speech (trainedAlgorithmicMedia), made by gateway ")
	b.WriteString(m.Gateway)
	b.WriteString(" with ")
	b.WriteString(m.Provider)
	b.WriteString("/")
	b.WriteString(m.Model)
	b.WriteString(", request ")
	b.WriteString(m.RequestID)
	b.WriteString(", ")
	b.WriteString(m.Time.UTC().Format(time.RFC3339))
	return b.String()
}

// How a file was marked: the value of the answer's X-Voxgate-Mark header.
const (
	// MarkedID3 is an ID3v2.4 tag in front of MPEG audio.
	MarkedID3 = "id3v2"
	// MarkedRIFF is LIST/INFO and iXML chunks in a WAV file.
	MarkedRIFF = "riff-info+ixml"
	// MarkedVorbis is Vorbis comments (OpusTags in Ogg Opus, a
	// VORBIS_COMMENT block in FLAC).
	MarkedVorbis = "vorbis-comment"
	// UnmarkedRaw says the format (raw PCM, G.711) has no place for
	// metadata.
	UnmarkedRaw = "none; raw audio cannot carry a mark"
	// UnmarkedOff says the organization turned marking off.
	UnmarkedOff = "off; turned off for this organization"
	// UnmarkedHeader says a stream's first piece did not hold the whole
	// header the mark goes into, so the stream went out unmarked.
	UnmarkedHeader = "none; the stream's header did not arrive whole"
	// UnmarkedRealtime says a realtime context's audio went out as
	// pieces of raw audio in WebSocket messages, with no file header a
	// mark could go into.
	UnmarkedRealtime = "none; realtime audio is sent in pieces without a file header"
)

// errNoRoom is returned when the bytes do not hold a complete header of
// their container (a stream's first piece cut short, a corrupt file).
var errNoRoom = errors.New("provenance: the container's header is not complete")

// Insert marks b, a whole file (whole) or a stream's first piece, of
// format, which is one of audio's Format constants. The marked file is head followed by
// b[tail:]: the audio itself is not copied. how is the X-Voxgate-Mark
// value. A format without metadata answers head nil, tail 0 and
// UnmarkedRaw; bytes that are not a complete header of their container
// answer head nil, tail 0, and an error (the caller sends b unmarked).
//
// Hot path: called once for every answer; one allocation for head.
func Insert(b []byte, format string, m *Mark, whole bool) (head []byte, tail int, how string, err error) {
	switch format {
	case "mp3":
		return id3Tag(m.Fields()), 0, MarkedID3, nil
	case "wav":
		head, tail, err = insertRIFF(b, m)
		return head, tail, MarkedRIFF, err
	case "flac":
		head, tail, err = insertFLAC(b, m.Fields())
		return head, tail, MarkedVorbis, err
	case "opus":
		head, tail, err = insertOgg(b, m.Fields(), whole)
		return head, tail, MarkedVorbis, err
	}
	return nil, 0, UnmarkedRaw, nil
}

// Container is the audio format of mediaType whose container can carry
// a mark, or "" (raw PCM, G.711, anything unknown).
func Container(mediaType string) string {
	mt, err := audio.ParseMediaType(mediaType)
	if err == nil {
		if mt.Format == audio.FormatWAV || mt.Format == audio.FormatMP3 {
			return mt.Format
		}
		return ""
	}
	typ, _, _ := strings.Cut(strings.ToLower(mediaType), ";")
	switch strings.TrimSpace(typ) {
	case "audio/ogg", "audio/opus":
		return audio.FormatOpus
	case "audio/flac", "audio/x-flac":
		return audio.FormatFLAC
	}
	return ""
}
