package audio

// Process applies the whole-clip parameters p to a provider's clip and
// returns the new bytes and media type. It is the speech handler's one
// call: validate, decode, change tempo (Stretch), resample to the output
// rate, normalize, encode.
//
// Without any parameter (NeedsProcessing false) it returns data and
// mediaType unchanged. Without volumeDbfs and an output naming the
// source's own format, an MP3 source at the requested rate (and no bitrate
// asked for) is also returned as is, since re-encoding MP3 only loses
// quality; WAV and PCM are re-encoded, which is lossless for 16-bit mono
// and yields a canonical header. With volumeDbfs but no output the clip
// keeps its format and rate.
//
// Resampling happens before leveling so that the limiter's ceiling holds on
// the samples that are encoded. Invalid parameters give a *ValidationError
// (errors.Is ErrInvalidParams); undecodable audio an error wrapping
// ErrUnsupportedMediaType or ErrCorrupt.
func Process(data []byte, mediaType string, p Params) ([]byte, string, error) {
	if !NeedsProcessing(p) {
		return data, mediaType, nil
	}
	if errs := p.Validate(); len(errs) > 0 {
		return nil, "", &ValidationError{Fields: errs}
	}
	src, err := ParseMediaType(mediaType)
	if err != nil {
		return nil, "", err
	}
	out := Output{Format: src.Format}
	if p.Output != nil {
		out = p.Output.Output()
	}
	stretch := p.Stretch != 0 && p.Stretch != 1
	if p.VolumeDbfs == nil && !stretch && mp3PassThrough(data, src, out) {
		return data, MediaType{Format: FormatMP3}.String(), nil
	}
	clip, err := decodeAs(data, src)
	if err != nil {
		return nil, "", err
	}
	if stretch {
		if clip, err = Stretch(clip, p.Stretch); err != nil {
			return nil, "", err
		}
	}
	o, err := out.Resolve(clip.Rate)
	if err != nil {
		return nil, "", err
	}
	if clip, err = Resample(clip, o.SampleRate); err != nil {
		return nil, "", err
	}
	if p.VolumeDbfs != nil {
		Normalize(clip, *p.VolumeDbfs)
	}
	return Encode(clip, o)
}

// mp3PassThrough reports whether an MP3 source already is the requested
// MP3 output: no bitrate asked for and the requested rate (if any) is the
// stream's.
func mp3PassThrough(data []byte, src MediaType, out Output) bool {
	if src.Format != FormatMP3 || out.Format != FormatMP3 || out.Bitrate != 0 {
		return false
	}
	if out.SampleRate == 0 {
		return true
	}
	info, err := probeMP3(data)
	return err == nil && info.first.rate == out.SampleRate
}
