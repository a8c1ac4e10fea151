package main

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// deployment is what the settings say about the server behind one
// provider id: its models, voices and declared capabilities. The server
// cannot be asked (OpenAI's API has no capability listing), so the
// operator declares them and the plugin believes the declaration.
type deployment struct {
	id, name     string
	models       []string
	defaultModel string
	// voices holds each model's voices; a model without its own list
	// has allVoices.
	voices    map[string][]string
	allVoices []string
	formats   []string
	rate      int
	streaming bool
	// keyRequired: a call without a key fails before any request, as
	// for a cloud API; otherwise it goes without an Authorization header.
	keyRequired bool
	maxChars    int
	// minSpeed and maxSpeed bound the speed sent natively; both 0 when
	// the server is not declared to honour speed.
	minSpeed, maxSpeed float64
}

// list splits a comma-separated setting, dropping blanks.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseDeployment reads the plugin's own settings (see README.md):
//
//	name, id, models, default_model, voices, voices.<model>, formats,
//	sample_rate, streaming, key_required, max_text_chars, speed
//
// A malformed value is an error naming the key.
func parseDeployment(settings map[string]string) (*deployment, error) {
	d := &deployment{
		id:        cmp.Or(strings.TrimSpace(settings["id"]), defaultID),
		name:      cmp.Or(strings.TrimSpace(settings["name"]), "OpenAI-compatible"),
		models:    list(settings["models"]),
		allVoices: list(settings["voices"]),
		voices:    map[string][]string{},
		formats:   list(cmp.Or(settings["formats"], "pcm, wav, mp3")),
		rate:      24000,
		streaming: true,
	}
	var errs []error
	if strings.ContainsAny(d.id, "/ \t") {
		errs = append(errs, fmt.Errorf("id %q: no slashes or spaces", d.id))
	}
	if len(d.models) == 0 {
		errs = append(errs, errors.New("models: list the server's model ids, comma-separated"))
	}
	for i, m := range d.models {
		if slices.Contains(d.models[:i], m) {
			errs = append(errs, fmt.Errorf("models: %q is listed twice", m))
		}
	}
	d.defaultModel = strings.TrimSpace(settings["default_model"])
	if d.defaultModel == "" && len(d.models) > 0 {
		d.defaultModel = d.models[0]
	}
	if d.defaultModel != "" && !slices.Contains(d.models, d.defaultModel) {
		errs = append(errs, fmt.Errorf("default_model %q is not among models", d.defaultModel))
	}
	for key, v := range settings {
		if m, ok := strings.CutPrefix(key, "voices."); ok {
			if !slices.Contains(d.models, m) {
				errs = append(errs, fmt.Errorf("%s: %q is not among models", key, m))
			}
			d.voices[m] = list(v)
		}
	}
	if len(d.formats) == 0 {
		errs = append(errs, errors.New("formats: list at least one of "+strings.Join(responseFormats(), ", ")))
	}
	for i, f := range d.formats {
		if !slices.Contains(responseFormats(), f) {
			errs = append(errs, fmt.Errorf("formats: %q is not one of OpenAI's response_format values %s", f, strings.Join(responseFormats(), ", ")))
		}
		if slices.Contains(d.formats[:i], f) {
			errs = append(errs, fmt.Errorf("formats: %q is listed twice", f))
		}
	}
	if v := strings.TrimSpace(settings["sample_rate"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 8000 || n > 192000 {
			errs = append(errs, fmt.Errorf("sample_rate %q: want the rate of the server's audio, e.g. 24000", v))
		}
		d.rate = n
	}
	if v := strings.TrimSpace(settings["streaming"]); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("streaming %q: want true or false", v))
		}
		d.streaming = b
	}
	if v := strings.TrimSpace(settings["key_required"]); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("key_required %q: want true or false", v))
		}
		d.keyRequired = b
	}
	if v := strings.TrimSpace(settings["max_text_chars"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("max_text_chars %q: want a positive integer", v))
		}
		d.maxChars = n
	}
	if v := strings.TrimSpace(settings["speed"]); v != "" {
		from, to, ok := strings.Cut(v, "-")
		lo, err1 := strconv.ParseFloat(strings.TrimSpace(from), 64)
		hi, err2 := strconv.ParseFloat(strings.TrimSpace(to), 64)
		if !ok || err1 != nil || err2 != nil || lo <= 0 || hi < lo {
			errs = append(errs, fmt.Errorf("speed %q: want the native range, e.g. 0.25-4", v))
		}
		d.minSpeed, d.maxSpeed = lo, hi
	}
	return d, errors.Join(errs...)
}

// voicesOf returns model's declared voices.
func (d *deployment) voicesOf(model string) []string {
	if v, ok := d.voices[model]; ok {
		return v
	}
	return d.allVoices
}

// responseFormats are the response_format values of OpenAI's speech
// API (the API reference's CreateSpeechRequest, read 2026-11-28), which
// are also the sdk's names of those formats.
func responseFormats() []string {
	return []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3, sdk.FormatOpus, sdk.FormatAAC, sdk.FormatFLAC}
}

// encodings are the declared formats as native encodings, in the
// declared order: each at the server's sample_rate (OpenAI's API has no
// rate or bitrate parameter, so a server answers one rate, at its own
// bitrate), except Opus, listed at the 48 kHz every Opus stream decodes
// at (RFC 7845).
func (d *deployment) encodings() []sdk.Encoding {
	out := make([]sdk.Encoding, 0, len(d.formats))
	for _, f := range d.formats {
		rate := d.rate
		if f == sdk.FormatOpus {
			rate = 48000
		}
		out = append(out, sdk.Encoding{Format: f, SampleRate: rate})
	}
	return out
}

// model is the catalog entry of one declared model.
func (d *deployment) model(id string) sdk.Model {
	return sdk.Model{
		ID:           id,
		Name:         id,
		Capabilities: sdk.Capabilities{Streaming: d.streaming, Speed: d.maxSpeed > 0},
		Encodings:    d.encodings(),
		MaxTextChars: d.maxChars,
		MinSpeed:     d.minSpeed,
		MaxSpeed:     d.maxSpeed,
	}
}

// describe is the catalog entry the settings declare, and an
// sdk.AnyModel entry for the ids the server may host beyond the declared
// models (lookup): the declaration's formats, rate, speed and limit are
// the server's, so they hold for those too.
func (d *deployment) describe() *sdk.Description {
	desc := &sdk.Description{ID: d.id, Name: d.name, DefaultModel: d.defaultModel}
	for _, m := range d.models {
		desc.Models = append(desc.Models, d.model(m))
	}
	pt := d.model(sdk.AnyModel)
	pt.Name = "Any other model of the server (passed through)"
	desc.Models = append(desc.Models, pt)
	return desc
}

// modelIDPattern is the grammar the plugin holds an undeclared model id
// to. OpenAI-compatible servers name models as they like (kokoro,
// hexgrad/Kokoro-82M, tts-1, a tag such as orpheus:3b), so it is wide:
// ASCII letters, digits and . _ - / : @ +, starting with a letter or
// digit. The id only goes into the JSON body, never a URL.
var modelIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$`)

// lookup returns the model id as the gateway sees it: a declared model,
// or an undeclared one the server may host, passed through as it is
// named with the declaration's abilities (describe). Any other id is the
// caller's mistake.
func (d *deployment) lookup(name, id string) (sdk.Model, error) {
	if !slices.Contains(d.models, id) && !modelIDPattern.MatchString(id) {
		return sdk.Model{}, sdk.Errorf(sdk.KindInvalidRequest,
			"%s: unknown model %q: a model id it passes through is ASCII letters, digits and . _ - / : @ +, e.g. %s", name, id, d.defaultModel)
	}
	return d.model(id), nil
}
