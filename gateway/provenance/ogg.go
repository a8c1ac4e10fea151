package provenance

import (
	"bytes"
	"encoding/binary"
)

// Ogg Opus (RFC 7845) keeps its tags in the stream's second packet,
// OpusTags, on pages of its own before any audio. insertOgg writes that
// packet again with the mark's comments added and puts it on new pages;
// the audio pages after it are the original bytes. Should the new packet
// need a different number of pages than the old one (only with tags of
// tens of kilobytes), every later page's sequence number and checksum is
// written again too, which a stream cannot do for pages not yet sent.

// oggPage is one parsed page.
type oggPage struct {
	flags    byte
	granule  uint64
	serial   uint32
	seq      uint32
	segments []byte
	body     []byte
	end      int // offset just past the page in the input
}

// parseOggPage parses the page at b[off:]; ok is false when it is not
// whole.
func parseOggPage(b []byte, off int) (p oggPage, ok bool) {
	if off+27 > len(b) || string(b[off:off+4]) != "OggS" || b[off+4] != 0 {
		return p, false
	}
	h := b[off:]
	p.flags = h[5]
	p.granule = binary.LittleEndian.Uint64(h[6:])
	p.serial = binary.LittleEndian.Uint32(h[14:])
	p.seq = binary.LittleEndian.Uint32(h[18:])
	nseg := int(h[26])
	if off+27+nseg > len(b) {
		return p, false
	}
	p.segments = h[27 : 27+nseg]
	size := 0
	for _, s := range p.segments {
		size += int(s)
	}
	start := off + 27 + nseg
	if start+size > len(b) {
		return p, false
	}
	p.body = b[start : start+size]
	p.end = start + size
	return p, true
}

// appendOggPage appends a page with a fresh checksum.
func appendOggPage(out []byte, flags byte, granule uint64, serial, seq uint32, segments, body []byte) []byte {
	start := len(out)
	out = append(out, 'O', 'g', 'g', 'S', 0, flags)
	out = binary.LittleEndian.AppendUint64(out, granule)
	out = binary.LittleEndian.AppendUint32(out, serial)
	out = binary.LittleEndian.AppendUint32(out, seq)
	out = append(out, 0, 0, 0, 0, byte(len(segments)))
	out = append(out, segments...)
	out = append(out, body...)
	binary.LittleEndian.PutUint32(out[start+22:], oggCRC(out[start:]))
	return out
}

// insertOgg marks an Ogg Opus file or a stream's first piece (whole is
// false: the pages after those in b are not at hand).
func insertOgg(b []byte, fields []Field, whole bool) ([]byte, int, error) {
	first, ok := parseOggPage(b, 0)
	if !ok || first.flags&0x02 == 0 || !bytes.HasPrefix(first.body, []byte("OpusHead")) {
		return nil, 0, errNoRoom
	}
	// The OpusTags packet: every segment of the pages after the first up
	// to the first segment shorter than 255.
	var packet []byte
	off, pages := first.end, 0
	done := false
	for !done {
		p, ok := parseOggPage(b, off)
		if !ok || p.serial != first.serial {
			return nil, 0, errNoRoom
		}
		pages++
		off = p.end
		pos := 0
		for i, s := range p.segments {
			packet = append(packet, p.body[pos:pos+int(s)]...)
			pos += int(s)
			if s < 255 {
				if i != len(p.segments)-1 {
					return nil, 0, errNoRoom // audio shares the page: not what RFC 7845 allows
				}
				done = true
				break
			}
		}
	}
	if !bytes.HasPrefix(packet, []byte("OpusTags")) {
		return nil, 0, errNoRoom
	}
	vc, ok := parseVorbisComments(packet[8:])
	if !ok {
		return nil, 0, errNoRoom
	}
	tags := appendVorbisComments([]byte("OpusTags"), vc, fields)
	head := make([]byte, 0, first.end+len(tags)+len(tags)/255/255*282+300)
	head = append(head, b[:first.end]...)
	seq := first.seq + 1
	// Lacing: 255-byte segments and one shorter (possibly empty) last
	// one; at most 255 segments a page.
	rest, cont := tags, false
	for {
		var segs []byte
		n := 0
		for len(segs) < 255 {
			s := min(len(rest)-n, 255)
			segs = append(segs, byte(s))
			n += s
			if s < 255 {
				break
			}
		}
		flags := byte(0)
		if cont {
			flags = 0x01
		}
		head = appendOggPage(head, flags, 0, first.serial, seq, segs, rest[:n])
		seq++
		rest = rest[n:]
		if segs[len(segs)-1] < 255 {
			break
		}
		cont = true
	}
	delta := int(seq) - int(first.seq+1) - pages
	if delta == 0 {
		return head, off, nil
	}
	if !whole {
		return nil, 0, errNoRoom
	}
	for off < len(b) {
		p, ok := parseOggPage(b, off)
		if !ok {
			return nil, 0, errNoRoom
		}
		s := p.seq
		if p.serial == first.serial {
			s = uint32(int(s) + delta)
		}
		head = appendOggPage(head, p.flags, p.granule, p.serial, s, p.segments, p.body)
		off = p.end
	}
	return head, off, nil
}

// oggCRC is Ogg's page checksum: CRC-32 with polynomial 0x04c11db7,
// unreflected, initial value and final XOR 0, over the page with its
// checksum field zeroed. (Go's hash/crc32 only computes the reflected
// variant.)
func oggCRC(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc = crc<<8 ^ oggCRCTable[byte(crc>>24)^c]
	}
	return crc
}

var oggCRCTable = func() (t [256]uint32) {
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return t
}()
