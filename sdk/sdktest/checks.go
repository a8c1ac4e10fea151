package sdktest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// knownFormats are the formats the gateway understands and the kit decodes.
func knownFormat(f string) bool { return sdk.KnownFormat(f) }

// ValidateDescription reports everything wrong with d: ids present and unique,
// the default model among the models, output formats known (or listed in
// customFormats), limits not negative. An sdk.AnyModel entry (the model
// the gateway assumes for ids the provider does not list) is held to the
// same rules, since the gateway relies on its fields as on a listed
// model's, but it does not count as a model: the default must be a
// listed one. It returns nil for a sane description.
func ValidateDescription(d *sdk.Description, customFormats []string) error {
	if d == nil {
		return errors.New("description is nil")
	}
	var errs []error
	if d.ID == "" {
		errs = append(errs, errors.New("provider ID is empty"))
	}
	if strings.ContainsAny(d.ID, "/ \t\n") {
		errs = append(errs, fmt.Errorf("provider ID %q contains '/' or space; it is the first half of `provider/model`", d.ID))
	}
	if !slices.ContainsFunc(d.Models, func(m sdk.Model) bool { return m.ID != sdk.AnyModel }) {
		errs = append(errs, errors.New("no models (an sdk.AnyModel entry alone lists none)"))
	}
	seen := map[string]bool{}
	for i, m := range d.Models {
		where := fmt.Sprintf("model %d (%q)", i, m.ID)
		if m.ID == sdk.AnyModel {
			where = fmt.Sprintf("model %d (sdk.AnyModel, for the ids the provider does not list)", i)
		}
		if m.ID == "" {
			errs = append(errs, fmt.Errorf("%s: ID is empty", where))
		}
		if seen[m.ID] {
			errs = append(errs, fmt.Errorf("%s: duplicate ID", where))
		}
		seen[m.ID] = true
		if len(m.OutputFormats) == 0 && len(m.Encodings) == 0 {
			errs = append(errs, fmt.Errorf("%s: no output formats", where))
		}
		for _, f := range m.OutputFormats {
			if !knownFormat(f) && !slices.Contains(customFormats, f) {
				errs = append(errs, fmt.Errorf("%s: unknown output format %q (known: the sdk's Format constants; list provider-specific ones in Config.CustomFormats)", where, f))
			}
		}
		errs = append(errs, validateEncodings(where, m, customFormats)...)
		errs = append(errs, validatePrices(where, m)...)
		for _, r := range m.SampleRates {
			if r <= 0 {
				errs = append(errs, fmt.Errorf("%s: sample rate %d", where, r))
			}
		}
		if m.NativeSampleRate < 0 {
			errs = append(errs, fmt.Errorf("%s: native sample rate %d", where, m.NativeSampleRate))
		}
		if m.MaxTextChars < 0 {
			errs = append(errs, fmt.Errorf("%s: MaxTextChars %d", where, m.MaxTextChars))
		}
		if m.MinSpeed < 0 || m.MaxSpeed < 0 || (m.MaxSpeed > 0 && m.MinSpeed > m.MaxSpeed) {
			errs = append(errs, fmt.Errorf("%s: speed range %g to %g", where, m.MinSpeed, m.MaxSpeed))
		}
		if (m.MinSpeed != 0 || m.MaxSpeed != 0) && !m.Capabilities.Speed {
			errs = append(errs, fmt.Errorf("%s: a speed range without Capabilities.Speed", where))
		}
	}
	switch {
	case d.DefaultModel == sdk.AnyModel:
		errs = append(errs, errors.New("default model is sdk.AnyModel; it must be a listed model"))
	case !seen[d.DefaultModel] || d.DefaultModel == "":
		errs = append(errs, fmt.Errorf("default model %q is not among the models", d.DefaultModel))
	}
	return errors.Join(errs...)
}

// ValidateVoices reports voices without an ID and duplicate IDs.
func ValidateVoices(voices []sdk.Voice) error {
	var errs []error
	seen := map[string]bool{}
	for i, v := range voices {
		if v.ID == "" {
			errs = append(errs, fmt.Errorf("voice %d (%q) has no ID", i, v.Name))
			continue
		}
		if seen[v.ID] {
			errs = append(errs, fmt.Errorf("voice %d: duplicate ID %q", i, v.ID))
		}
		seen[v.ID] = true
	}
	return errors.Join(errs...)
}

// TimestampTolerance is how far (seconds) a word may end past the end of
// the clip, on top of 2% of the clip: engines round to their frame size.
const TimestampTolerance = 0.1

// ValidateTimestamps reports what is wrong with the word timestamps of a clip
// of text lasting clipSeconds: roughly one entry per word (engines split
// and merge a little: half to twice the count of space-separated words),
// each with text and start <= end, starts in non-decreasing order, all
// inside the clip within TimestampTolerance.
func ValidateTimestamps(ts []sdk.WordTimestamp, text string, clipSeconds float64) error {
	words := len(strings.Fields(text))
	if len(ts) == 0 {
		return fmt.Errorf("no timestamps for %d words", words)
	}
	var errs []error
	if len(ts) < (words+1)/2 || len(ts) > 2*words+2 {
		errs = append(errs, fmt.Errorf("%d timestamps for %d words; want about one per word", len(ts), words))
	}
	limit := clipSeconds*1.02 + TimestampTolerance
	for i, w := range ts {
		where := fmt.Sprintf("timestamp %d (%q %.3f-%.3f)", i, w.Text, w.Start, w.End)
		if strings.TrimSpace(w.Text) == "" {
			errs = append(errs, fmt.Errorf("%s: no text", where))
		}
		if w.Start < 0 {
			errs = append(errs, fmt.Errorf("%s: starts before the clip", where))
		}
		if w.Start > w.End {
			errs = append(errs, fmt.Errorf("%s: starts after it ends", where))
		}
		if w.End > limit {
			errs = append(errs, fmt.Errorf("%s: ends after the clip (%.3f s)", where, clipSeconds))
		}
		if i > 0 && w.Start < ts[i-1].Start {
			errs = append(errs, fmt.Errorf("%s: starts before the previous word", where))
		}
	}
	return errors.Join(errs...)
}

// validateEncodings checks a model's native encodings: known formats,
// rates and bitrates not negative, none listed twice, raw formats with a
// rate (their media type needs it), and the formats the same as
// OutputFormats, which the gateway's catalog shows to clients.
func validateEncodings(where string, m sdk.Model, customFormats []string) []error {
	var errs []error
	seen := map[sdk.Encoding]bool{}
	var formats []string
	for _, e := range m.Encodings {
		switch {
		case !knownFormat(e.Format) && !slices.Contains(customFormats, e.Format):
			errs = append(errs, fmt.Errorf("%s: encoding %s: unknown format %q", where, e, e.Format))
		case e.SampleRate < 0 || e.Bitrate < 0:
			errs = append(errs, fmt.Errorf("%s: encoding %s: negative rate or bitrate", where, e))
		case seen[e]:
			errs = append(errs, fmt.Errorf("%s: encoding %s listed twice", where, e))
		case e.SampleRate == 0 && (e.Format == sdk.FormatPCM || e.Format == sdk.FormatULaw || e.Format == sdk.FormatALaw):
			errs = append(errs, fmt.Errorf("%s: encoding %s: raw audio needs its sample rate", where, e))
		}
		seen[e] = true
		if !slices.Contains(formats, e.Format) {
			formats = append(formats, e.Format)
		}
	}
	for _, e := range m.StreamEncodings {
		if !slices.Contains(m.Encodings, e) {
			errs = append(errs, fmt.Errorf("%s: stream encoding %s is not among Encodings", where, e))
		}
	}
	if len(m.Encodings) > 0 && len(m.OutputFormats) > 0 && !slices.Equal(formats, m.OutputFormats) {
		errs = append(errs, fmt.Errorf("%s: OutputFormats %v differ from the formats of Encodings %v (leave OutputFormats empty: Serve derives it)", where, m.OutputFormats, formats))
	}
	return errs
}

// priceUnits are the billing units a price may name.
var priceUnits = []string{sdk.UnitCharacters, sdk.UnitUTF8Bytes, sdk.UnitTextTokens, sdk.UnitAudioTokens, sdk.UnitAudioSeconds, sdk.UnitRequests}

// validatePrices checks a model's list prices, when it declares them:
// each in a known unit, not negative, with a currency, a source and the
// date it was read (YYYY-MM-DD), an audio-token price with its tokens a
// second. (A model without prices costs nothing counted; the gateway's
// own plugins all declare theirs, sdk.Unpublished where there is none.)
func validatePrices(where string, m sdk.Model) []error {
	var errs []error
	for i, p := range m.Prices {
		at := fmt.Sprintf("%s: price %d (%s)", where, i, p.Unit)
		_, dateErr := time.Parse(time.DateOnly, p.Date)
		switch {
		case !slices.Contains(priceUnits, p.Unit):
			errs = append(errs, fmt.Errorf("%s: unknown unit (known: %v)", at, priceUnits))
		case p.Amount < 0 || p.Per < 0 || p.PerCharacter < 0:
			errs = append(errs, fmt.Errorf("%s: negative amount, per or per-character weight", at))
		case p.Currency == "" || p.Source == "":
			errs = append(errs, fmt.Errorf("%s: no currency or source", at))
		case dateErr != nil:
			errs = append(errs, fmt.Errorf("%s: date %q is not YYYY-MM-DD", at, p.Date))
		case p.Unit == sdk.UnitAudioTokens && p.TokensPerSecond <= 0:
			errs = append(errs, fmt.Errorf("%s: audio tokens need TokensPerSecond", at))
		case p.Source == sdk.PriceUnpublished && p.Amount != 0:
			errs = append(errs, fmt.Errorf("%s: an unpublished price has amount 0", at))
		}
	}
	return errs
}

// CheckBilledReadBack checks that a provider reports what its API said it
// billed for req (want): a clip's on the response, a stream's on a last
// chunk of its own, carrying no audio, once the answer has been read.
func CheckBilledReadBack(t testing.TB, p sdk.Provider, req *sdk.SynthesizeRequest, want []sdk.BilledUsage) {
	t.Helper()
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(resp.Billed, want) {
		t.Errorf("clip billed %+v, want %+v", resp.Billed, want)
	}
	var chunks []sdk.Chunk
	if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { chunks = append(chunks, c); return nil }); err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		last := i == len(chunks)-1
		if last != (c.Billed != nil) || (last && (!reflect.DeepEqual(c.Billed, want) || len(c.Data) != 0)) {
			t.Errorf("chunk %d of %d: billed %+v with %d bytes; want %+v alone on the last", i, len(chunks), c.Billed, len(c.Data), want)
		}
	}
}
