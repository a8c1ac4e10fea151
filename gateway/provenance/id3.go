package provenance

// A small ID3v2.4 writer, by hand: the packages this project may draw
// on hold no Go ID3 library, and a tag of text frames is a header and a
// list of length-prefixed frames (id3.org's id3v2.4.0-structure and
// id3v2.4.0-frames). Text is UTF-8 (encoding 3), which 2.4 allows.

// id3Tag returns an ID3v2.4 tag holding fields: a TXXX frame each (the
// field's name as its description), and the comment as a COMM frame,
// which players show as the file's comment.
func id3Tag(fields []Field) []byte {
	n := 10
	for _, f := range fields {
		n += 10 + id3FrameLen(f)
	}
	b := make([]byte, 0, n)
	b = append(b, 'I', 'D', '3', 4, 0, 0)
	b = appendSyncsafe(b, n-10)
	for _, f := range fields {
		size := id3FrameLen(f)
		if f.Name == FieldComment {
			b = append(b, 'C', 'O', 'M', 'M')
			b = appendSyncsafe(b, size)
			b = append(b, 0, 0, 3, 'e', 'n', 'g', 0) // flags, UTF-8, language, empty description
			b = append(b, f.Value...)
			continue
		}
		b = append(b, 'T', 'X', 'X', 'X')
		b = appendSyncsafe(b, size)
		b = append(b, 0, 0, 3) // flags, UTF-8
		b = append(b, f.Name...)
		b = append(b, 0)
		b = append(b, f.Value...)
	}
	return b
}

// id3FrameLen is the size of f's frame less its 10-byte header.
func id3FrameLen(f Field) int {
	if f.Name == FieldComment {
		return 1 + 3 + 1 + len(f.Value)
	}
	return 1 + len(f.Name) + 1 + len(f.Value)
}

// appendSyncsafe appends n as ID3's 28-bit syncsafe integer (7 bits a
// byte, so no byte looks like an MPEG frame sync).
func appendSyncsafe(b []byte, n int) []byte {
	return append(b, byte(n>>21)&0x7f, byte(n>>14)&0x7f, byte(n>>7)&0x7f, byte(n)&0x7f)
}
