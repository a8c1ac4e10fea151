package audio

// Encode encodes the clip as out asks (after out.Resolve against the
// clip's rate) and returns the bytes and their media type: "audio/wav"
// (16-bit PCM mono, canonical 44-byte header), "audio/pcm;rate=N" (16-bit
// little-endian mono) or "audio/mpeg" (CBR, mono, with a Xing/LAME tag that
// lets gapless decoders trim the encoder delay and padding).
//
// If the output rate differs from the clip's, Encode resamples first. Note
// that resampling after Normalize can move peaks slightly (band-limiting
// overshoot); Process therefore resamples before leveling.
func Encode(c *Clip, out Output) ([]byte, string, error) {
	o, err := out.Resolve(c.Rate)
	if err != nil {
		return nil, "", err
	}
	if c, err = Resample(c, o.SampleRate); err != nil {
		return nil, "", err
	}
	return encodeStream(&seqReader{src: clipSource{c}}, len(c.Samples), o, Limits{})
}
