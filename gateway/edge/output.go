package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
)

// decodeOutput reads a request's `output`: the documented string shorthand
// ("wav", "mp3", "pcm", or any format name, which then meets the same
// validation as output.format) or the object {format, sampleRate,
// bitrate}, decoded as strictly as the rest of the body with errors at
// ["output", ...]. Absent or null means no conversion.
func decodeOutput(raw outputField) (*audio.OutputParams, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	if t[0] == '"' {
		if format, next, ok := scanString(t, 0); ok && next == len(t) {
			return &audio.OutputParams{Format: format}, nil // the flat decoder's reading (flatjson.go)
		}
	} else if o, ok := scanOutput(t); ok {
		return o.domain(), nil
	}
	return decodeOutputGeneral(t)
}

// decodeOutputGeneral is decodeOutput for what the flat scanner declines
// (FuzzScanOutput holds the two to the same values where it does not).
func decodeOutputGeneral(t []byte) (*audio.OutputParams, error) {
	switch t[0] {
	case '"':
		var format string
		if err := json.Unmarshal(t, &format); err != nil {
			return nil, problem.Validation(problem.Field("must be a format name or an object", "output"))
		}
		return &audio.OutputParams{Format: format}, nil
	case '{':
	default:
		return nil, problem.Validation(problem.Field(`must be a format name such as "mp3", or an object {format, sampleRate?, bitrate?}`, "output"))
	}
	// As decodeHot: go-json-experiment first, encoding/json for the
	// problem of an object it refuses.
	var o outputJSON
	if jsonv2.Unmarshal(t, &o, strictV2) == nil {
		return o.domain(), nil
	}
	o = outputJSON{}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ) && typ.Field != "":
			return nil, problem.Validation(problem.Field("must be "+jsonTypeName(typ.Type.Kind().String())+", not "+typ.Value, "output", typ.Field))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return nil, problem.Validation(problem.Field("unknown field", "output", strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)))
		}
		return nil, problem.Validation(problem.Field("must be a format name or an object {format, sampleRate?, bitrate?}", "output"))
	}
	return o.domain(), nil
}

// outputField is a request's `output` as sent, decoded by decodeOutput.
// Its object form has outputJSON's fields, so that a body with unknown
// fields elsewhere also has those inside `output` named (objectShape).
type outputField json.RawMessage

// UnmarshalJSON keeps the member as sent.
func (f *outputField) UnmarshalJSON(b []byte) error {
	*f = append((*f)[:0], b...)
	return nil
}

func (outputField) objectShape() reflect.Type { return reflect.TypeFor[outputJSON]() }
