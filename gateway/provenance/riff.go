package provenance

import (
	"encoding/binary"
	"encoding/xml"
	"strings"
)

// insertRIFF marks a WAV file: a LIST/INFO chunk (ICMT the comment, ISFT
// the software, ICRD the time: the fields every WAV tool shows) and an
// iXML chunk holding every field, both placed right before the data
// chunk. The RIFF size is grown by what was inserted unless it is a
// stream's placeholder (0 or 0xFFFFFFFF), which readers ignore anyway.
func insertRIFF(b []byte, m *Mark) ([]byte, int, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errNoRoom
	}
	data := -1
	for off := 12; off+8 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off+4:]))
		if string(b[off:off+4]) == "data" {
			data = off
			break
		}
		off += 8 + size + size&1
	}
	if data < 0 {
		return nil, 0, errNoRoom
	}
	info := riffInfo(m)
	ixml := riffChunk("iXML", ixmlDoc(m.Fields()))
	head := make([]byte, 0, data+len(info)+len(ixml))
	head = append(head, b[:data]...)
	head = append(head, info...)
	head = append(head, ixml...)
	if size := binary.LittleEndian.Uint32(b[4:]); size != 0 && size != 0xFFFFFFFF {
		binary.LittleEndian.PutUint32(head[4:], size+uint32(len(info)+len(ixml)))
	}
	return head, data, nil
}

// riffInfo is the LIST/INFO chunk of m.
func riffInfo(m *Mark) []byte {
	var body []byte
	body = append(body, "INFO"...)
	for _, sub := range [][2]string{
		{"ICMT", m.Comment()},
		{"ISFT", "voxgate (" + DigitalSourceType + ")"},
		{"ICRD", m.Time.UTC().Format("2006-01-02T15:04:05Z")},
	} {
		body = append(body, riffChunk(sub[0], sub[1]+"\x00")...)
	}
	return riffChunk("LIST", string(body))
}

// riffChunk is one chunk: id, little-endian size, body, pad byte to an
// even length.
func riffChunk(id, body string) []byte {
	c := make([]byte, 0, 8+len(body)+1)
	c = append(c, id...)
	c = binary.LittleEndian.AppendUint32(c, uint32(len(body)))
	c = append(c, body...)
	if len(body)%2 == 1 {
		c = append(c, 0)
	}
	return c
}

// ixmlDoc is an iXML document (the Broadcast WAV metadata of
// ixml.info) whose NOTE is the comment and whose USER element holds
// every field as an element of VOXGATE_PROVENANCE, for tools that read
// XML rather than INFO.
func ixmlDoc(fields []Field) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<BWFXML><IXML_VERSION>2.10</IXML_VERSION>")
	for _, f := range fields {
		if f.Name == FieldComment {
			b.WriteString("<NOTE>")
			_ = xml.EscapeText(&b, []byte(f.Value))
			b.WriteString("</NOTE>")
		}
	}
	b.WriteString("<USER><VOXGATE_PROVENANCE>")
	for _, f := range fields {
		b.WriteString("<" + f.Name + ">")
		_ = xml.EscapeText(&b, []byte(f.Value))
		b.WriteString("</" + f.Name + ">")
	}
	b.WriteString("</VOXGATE_PROVENANCE></USER></BWFXML>\n")
	return b.String()
}
