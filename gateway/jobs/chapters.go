package jobs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Chapter marks, written by hand: no Go library for ID3 chapter frames is
// available to this build, and the formats below are a few fixed fields.

// id3Chapters returns an ID3v2.4 tag with a table of contents (CTOC) and
// a CHAP frame per chapter, its title in a TIT2 sub-frame (the ID3v2
// Chapter Frame Addendum), for the start of an MP3 file. Times are in
// milliseconds; byte offsets are left unset (0xFFFFFFFF), as the addendum
// allows. A CTOC lists at most 255 chapters; players that read CHAP
// frames without it (ffmpeg does) see them all.
func id3Chapters(marks []chapterMark, rate int) []byte {
	if len(marks) == 0 {
		return nil
	}
	var frames bytes.Buffer
	toc := []byte("toc\x00")
	toc = append(toc, 0x03, byte(min(len(marks), 255))) // top level, ordered
	for i := range min(len(marks), 255) {
		toc = append(toc, fmt.Sprintf("ch%d\x00", i)...)
	}
	id3Frame(&frames, "CTOC", toc)
	for i, m := range marks {
		var b bytes.Buffer
		fmt.Fprintf(&b, "ch%d\x00", i)
		_ = binary.Write(&b, binary.BigEndian, [4]uint32{ms(m.start, rate), ms(m.end, rate), 0xFFFFFFFF, 0xFFFFFFFF})
		id3Frame(&b, "TIT2", append([]byte{0x03}, m.title...)) // UTF-8
		id3Frame(&frames, "CHAP", b.Bytes())
	}
	out := []byte{'I', 'D', '3', 4, 0, 0}
	out = append(out, synchsafe(frames.Len())...)
	return append(out, frames.Bytes()...)
}

func ms(samples int64, rate int) uint32 { return uint32(samples * 1000 / int64(rate)) }

func id3Frame(w *bytes.Buffer, id string, body []byte) {
	w.WriteString(id)
	w.Write(synchsafe(len(body)))
	w.Write([]byte{0, 0})
	w.Write(body)
}

// synchsafe is n in ID3v2's 4 bytes of 7 bits.
func synchsafe(n int) []byte {
	return []byte{byte(n >> 21 & 0x7f), byte(n >> 14 & 0x7f), byte(n >> 7 & 0x7f), byte(n & 0x7f)}
}

// opusChapters returns the chapter comments of an Ogg Opus file, in the
// Vorbis comment convention players and ffmpeg read: CHAPTERnnn with the
// start as HH:MM:SS.mmm and CHAPTERnnnNAME with the title, from 001.
func opusChapters(marks []chapterMark, rate int) [][2]string {
	var out [][2]string
	for i, m := range marks {
		t := int64(ms(m.start, rate))
		key := fmt.Sprintf("CHAPTER%03d", i+1)
		out = append(out, [2]string{key, fmt.Sprintf("%02d:%02d:%02d.%03d", t/3600000, t/60000%60, t/1000%60, t%1000)}, [2]string{key + "NAME", m.title})
	}
	return out
}

// WAV: a canonical header (RIFF, fmt of 16-bit mono PCM, data), the
// samples, then a cue chunk with a cue point at each chapter's start and
// a LIST/adtl chunk labelling each (labl), as audio editors read them.

// wavTrailer returns the cue and LIST chunks of marks.
func wavTrailer(marks []chapterMark) []byte {
	if len(marks) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("cue ")
	_ = binary.Write(&b, binary.LittleEndian, uint32(4+24*len(marks)))
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(marks)))
	for i, m := range marks {
		_ = binary.Write(&b, binary.LittleEndian, [2]uint32{uint32(i + 1), uint32(m.start)})
		b.WriteString("data")
		_ = binary.Write(&b, binary.LittleEndian, [3]uint32{0, 0, uint32(m.start)})
	}
	var adtl bytes.Buffer
	adtl.WriteString("adtl")
	for i, m := range marks {
		text := append([]byte(m.title), 0)
		adtl.WriteString("labl")
		_ = binary.Write(&adtl, binary.LittleEndian, uint32(4+len(text)))
		_ = binary.Write(&adtl, binary.LittleEndian, uint32(i+1))
		adtl.Write(text)
		if len(text)%2 == 1 {
			adtl.WriteByte(0)
		}
	}
	b.WriteString("LIST")
	_ = binary.Write(&b, binary.LittleEndian, uint32(adtl.Len()))
	b.Write(adtl.Bytes())
	return b.Bytes()
}

func writeWAVHeader(w io.Writer, rate int, samples int64, marks []chapterMark, mark func([]byte) ([]byte, error)) error {
	data := samples * 2
	if data+int64(len(wavTrailer(marks)))+36 > 0xFFFFFFFF {
		return fmt.Errorf("the job's audio is longer than a WAV file holds (4 GiB): ask for mp3 or opus")
	}
	var h bytes.Buffer
	h.WriteString("RIFF")
	_ = binary.Write(&h, binary.LittleEndian, uint32(36+data+int64(len(wavTrailer(marks)))))
	h.WriteString("WAVEfmt ")
	_ = binary.Write(&h, binary.LittleEndian, struct {
		Size                 uint32
		Format, Channels     uint16
		Rate, ByteRate       uint32
		BlockAlign, BitDepth uint16
	}{16, 1, 1, uint32(rate), uint32(rate * 2), 2, 16})
	h.WriteString("data")
	_ = binary.Write(&h, binary.LittleEndian, uint32(data))
	b, err := mark(h.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeWAVTrailer(w io.Writer, _ int, _ int64, marks []chapterMark) error {
	_, err := w.Write(wavTrailer(marks))
	return err
}
