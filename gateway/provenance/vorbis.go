package provenance

import (
	"encoding/binary"
)

// Vorbis comments (xiph.org's Vorbis I specification, section 5), the
// tags of both FLAC (a VORBIS_COMMENT metadata block) and Ogg Opus (the
// OpusTags packet, RFC 7845 section 5.2): a vendor string, then
// NAME=value strings, each prefixed by its little-endian 32-bit length.

// vorbisComments holds a parsed comment list.
type vorbisComments struct {
	vendor   []byte
	comments [][]byte
}

// parseVorbisComments parses b (without any packet signature); ok is
// false when b is cut short.
func parseVorbisComments(b []byte) (vc vorbisComments, ok bool) {
	if len(b) < 4 {
		return vc, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if n > len(b) || len(b)-n < 4 {
		return vc, false
	}
	vc.vendor, b = b[:n], b[n:]
	count := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	for range count {
		if len(b) < 4 {
			return vc, false
		}
		n := int(binary.LittleEndian.Uint32(b))
		if n > len(b)-4 {
			return vc, false
		}
		vc.comments = append(vc.comments, b[4:4+n])
		b = b[4+n:]
	}
	return vc, true
}

// appendVorbisComments appends vc's comments followed by fields.
func appendVorbisComments(out []byte, vc vorbisComments, fields []Field) []byte {
	vendor := vc.vendor
	if len(vendor) == 0 {
		vendor = []byte("voxgate")
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(vendor)))
	out = append(out, vendor...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(vc.comments)+len(fields)))
	for _, c := range vc.comments {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(c)))
		out = append(out, c...)
	}
	for _, f := range fields {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(f.Name)+1+len(f.Value)))
		out = append(out, f.Name...)
		out = append(out, '=')
		out = append(out, f.Value...)
	}
	return out
}

// FLAC metadata block types (RFC 9639 section 8.1).
const (
	flacStreamInfo    = 0
	flacVorbisComment = 4
)

// insertFLAC marks a FLAC file: its metadata blocks are written again
// with one VORBIS_COMMENT block (the file's own comments, if it had
// some, then the mark's) right after STREAMINFO; the frames after the
// metadata are the original bytes.
func insertFLAC(b []byte, fields []Field) ([]byte, int, error) {
	if len(b) < 4 || string(b[:4]) != "fLaC" {
		return nil, 0, errNoRoom
	}
	type block struct {
		kind byte
		body []byte
	}
	var blocks []block
	var vc vorbisComments
	off := 4
	for last := false; !last; {
		if off+4 > len(b) {
			return nil, 0, errNoRoom
		}
		last = b[off]&0x80 != 0
		kind := b[off] & 0x7f
		n := int(b[off+1])<<16 | int(b[off+2])<<8 | int(b[off+3])
		if off+4+n > len(b) {
			return nil, 0, errNoRoom
		}
		body := b[off+4 : off+4+n]
		off += 4 + n
		if kind == flacVorbisComment {
			var ok bool
			if vc, ok = parseVorbisComments(body); !ok {
				return nil, 0, errNoRoom
			}
			continue
		}
		blocks = append(blocks, block{kind, body})
	}
	if len(blocks) == 0 || blocks[0].kind != flacStreamInfo {
		return nil, 0, errNoRoom
	}
	comment := appendVorbisComments(nil, vc, fields)
	if len(comment) >= 1<<24 {
		return nil, 0, errNoRoom
	}
	blocks = append(blocks[:1], append([]block{{flacVorbisComment, comment}}, blocks[1:]...)...)
	head := make([]byte, 0, off+len(comment)+8)
	head = append(head, "fLaC"...)
	for i, bl := range blocks {
		h := bl.kind
		if i == len(blocks)-1 {
			h |= 0x80
		}
		n := len(bl.body)
		head = append(head, h, byte(n>>16), byte(n>>8), byte(n))
		head = append(head, bl.body...)
	}
	return head, off, nil
}
