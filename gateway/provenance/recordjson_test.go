package provenance

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// sameAsMarshal fails t unless marshalRecord(r) is json.Marshal(r), or
// both refuse r.
func sameAsMarshal(t *testing.T, r *Record) {
	t.Helper()
	got, gerr := marshalRecord(r)
	want, werr := json.Marshal(r)
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("errors differ: got %v, json.Marshal %v", gerr, werr)
	}
	if string(got) != string(want) {
		t.Fatalf("differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
}

// fill sets every field of the struct v points to, nested structs
// through pointers included, to a value that is not its zero, so that a
// member marshalRecord leaves out shows.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	at := time.Date(2026, 11, 28, 23, 59, 1, 5e6, time.UTC)
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case f.Type() == reflect.TypeOf(at):
			f.Set(reflect.ValueOf(at))
		case f.Kind() == reflect.String:
			f.SetString(name + " <&> é")
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(int64(i + 7))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			f.Set(reflect.New(f.Type().Elem()))
			fill(t, f.Elem())
		default:
			t.Fatalf("%s.%s is a %s: teach fill (and check marshalRecord writes it)", v.Type().Name(), name, f.Type())
		}
	}
}

// TestRecordJSONCoversRecord fails when Record, Mark or Consent gain a
// member marshalRecord does not write: every member set, the two
// encodings must agree.
func TestRecordJSONCoversRecord(t *testing.T) {
	var r Record
	fill(t, reflect.ValueOf(&r).Elem())
	sameAsMarshal(t, &r)
}

func TestRecordJSONIsMarshals(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 59, 1, 123456789, time.FixedZone("x", 3600+30))
	for _, tc := range []struct {
		name string
		r    Record
	}{
		{"zero", Record{}},
		{"plain", Record{Version: 1, RequestID: "0b0c5d4e", OrgID: "acme", Gateway: "gw", Provider: "openai", Model: "tts-1",
			Time: time.Unix(1, 0).UTC(), MediaType: "audio/mpeg", SHA256: "93b9", Bytes: 48000, Complete: true, Marked: MarkedID3}},
		{"escapes", Record{OrgID: "a\"b\\c<d>e&f", Gateway: "\b\f\n\r\t\x00\x01\x1f\x7f", Provider: "é😀\u2028\u2029",
			Model: "bad \xff\xfe utf-8 \xe2\x82", VoiceID: "v\u00a0", VoiceRef: "</script>"}},
		{"times", Record{Time: at, Mark: &Mark{Time: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
			Consent: &Consent{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("y", -(23*3600+59*60)))}}},
		{"year past 9999", Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"negative year in the mark", Record{Mark: &Mark{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{"a zone 24 hours off", Record{Consent: &Consent{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("z", 24*3600))}}},
		{"empty mark and consent", Record{Mark: &Mark{}, Consent: &Consent{}}},
	} {
		t.Run(tc.name, func(t *testing.T) { sameAsMarshal(t, &tc.r) })
	}
}

func FuzzRecordJSON(f *testing.F) {
	f.Add("acme", "<gw>", "voice_é", "\u2028\x00\xff", int64(1764374341123456789), 3600, true, true)
	f.Add("", "", "", "", int64(0), 0, false, false)
	f.Add("\"\\", "&", "\x7f", "\xe2\x82", int64(-9e18), -86399, true, false)
	f.Fuzz(func(t *testing.T, org, gateway, voice, statement string, ns int64, offset int, mark, consent bool) {
		at := time.Unix(0, ns).In(time.FixedZone("f", offset))
		r := &Record{Version: RecordVersion, RequestID: org + gateway, OrgID: org, Gateway: gateway, Provider: voice,
			Model: statement, VoiceID: voice, Time: at, MediaType: gateway, SHA256: org, Bytes: ns, Complete: mark,
			DigitalSourceType: statement, Marked: voice}
		if mark {
			r.Mark = &Mark{RequestID: org, Gateway: gateway, Provider: voice, Model: statement, Time: at.Add(time.Hour), SourceType: org}
		}
		if consent {
			r.Consent = &Consent{AttestedBy: gateway, Relation: voice, Statement: statement, Time: at}
		}
		sameAsMarshal(t, r)
	})
}
