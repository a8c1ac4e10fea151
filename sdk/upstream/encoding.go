package upstream

import (
	"fmt"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// ChooseEncoding returns the native encoding of m that req asks for:
// req.Format (empty: the format of m's first encoding, its default) at
// req.SampleRate and req.Bitrate, where 0 means the first one m lists
// (sdk.Model.FindEncoding). The gateway asks only for what a model lists,
// so an encoding m does not list is a caller's mistake: a
// KindInvalidRequest error, costing no upstream call, that names what m
// offers in that format (or, for a format m lacks, its formats).
//
// Every plugin that maps a request onto its provider's format parameters
// starts here, so that "0 means the model's default" and the error's
// wording are the same for all of them.
func ChooseEncoding(provider string, m *sdk.Model, req *sdk.SynthesizeRequest) (sdk.Encoding, error) {
	all := m.NativeEncodings()
	format := req.Format
	if format == "" && len(all) > 0 {
		format = all[0].Format
	}
	if e, ok := m.FindEncoding(format, req.SampleRate, req.Bitrate); ok {
		return e, nil
	}
	var same, formats []string
	for _, e := range all {
		if e.Format == format {
			same = append(same, e.String())
		}
		if !contains(formats, e.Format) {
			formats = append(formats, e.Format)
		}
	}
	asked := sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}
	if len(same) == 0 {
		return sdk.Encoding{}, sdk.Errorf(sdk.KindInvalidRequest, "%s: %s does not produce %q; it offers %s", provider, m.ID, format, strings.Join(formats, ", "))
	}
	return sdk.Encoding{}, sdk.Errorf(sdk.KindInvalidRequest, "%s: %s does not produce %s; in %s it offers %s", provider, m.ID, describe(asked), format, strings.Join(same, ", "))
}

// describe names an asked encoding for an error: "pcm at 16000 Hz",
// "mp3 at 44100 Hz and 192 kbit/s".
func describe(e sdk.Encoding) string {
	s := e.Format
	if e.SampleRate > 0 {
		s += fmt.Sprintf(" at %d Hz", e.SampleRate)
	}
	if e.Bitrate > 0 {
		if e.SampleRate > 0 {
			s += " and"
		}
		s += fmt.Sprintf(" %d kbit/s", e.Bitrate)
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
