package edge

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/problem"
)

// decodeSeeds are bodies where the two decoders could part: names in
// another case or twice, nulls, numbers at the edges, escapes, raw
// members with odd spacing, trailing data, invalid UTF-8.
var decodeSeeds = []string{
	`{"model":"openai/tts-1","voice":"alloy","text":"The quick brown fox.","output":{"format":"pcm"}}`,
	`{"model":"m","voice":"v","text":"t","output":"mp3"}`,
	`{"model":"m","voice":"v","text":"t","output":{"format":"mp3","sampleRate":24000,"bitrate":64}}`,
	`{"model":"m","voice":"v","text":"t","output":{ "format" : "wav" , "sampleRate" : 8000 }}`,
	`{"model":"m","voice":"v","text":"t","output":null}`,
	`{"model":"m","voice":"v","text":"t","output":{}}`,
	`{"model":"m","voice":"v","text":"t","output":{"format":"mp3","Format":"wav"}}`,
	`{"model":"m","voice":"v","text":"t","output":{"format":"mp3","extra":1}}`,
	`{"model":"m","voice":"v","text":"t","output":{"format":"mp3","sampleRate":24000.5}}`,
	`{"model":"m","voice":"v","text":"t","output":{"format":"mp3","sampleRate":"24000"}}`,
	`{"model":"m","voice":"v","text":"t","output":7}`,
	`{"Model":"m","voice":"v","text":"t"}`,
	`{"MODEL":"m","model":"n","voice":"v","text":"t"}`,
	`{"model":"m","model":"n","voice":"v","text":"t"}`,
	`{"model":"m","voice":"v","text":"t","foo":1}`,
	`{"model":"m","voice":"v","text":null}`,
	`{"model":null,"voice":"v","text":""}`,
	`{"model":"m","voice":"v","text":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n\t"}`,
	`{"model":"m","voice":"v","text":"lone \ud800 surrogate"}`,
	`{"model":"m","voice":"v","text":"bad \x escape"}`,
	`{"model":"m","voice":"v","text":"t","speed":1}`,
	`{"model":"m","voice":"v","text":"t","speed":1.0e0,"volumeDbfs":-0}`,
	`{"model":"m","voice":"v","text":"t","speed":1e400}`,
	`{"model":"m","voice":"v","text":"t","speed":"1"}`,
	`{"model":"m","voice":"v","text":"t","speed":01}`,
	`{"model":"m","voice":"v","text":"t","providerOptions":{"a":[1,2,{"b":null}],"c":"d"}}`,
	`{"model":"m","voice":"v","text":"t","providerOptions":  { "x" : 1 ,"y":[ ] } }`,
	`{"model":"m","voice":"v","text":"t","providerOptions":[]}`,
	`{"model":"m","voice":"v","text":"t","providerOptions":null}`,
	`{"model":"m","voice":"v","text":"t","providerOptions":{"a":1,"a":2}}`,
	`{"model":"m","voice":"v","text":"t","pronunciations":{"rules":[{"word":"a","replacement":"b","caseSensitive":true}],"dictionaryIds":["x","y"]}}`,
	`{"model":"m","voice":"v","text":"t","pronunciations":{"rules":null,"dictionaryIds":[]}}`,
	`{"model":"m","voice":"v","text":"t","pronunciations":{"rules":[{"word":"a","Word":"b"}]}}`,
	`{"voiceId":"6f1c2d3e-0000-4000-8000-000000000000","text":"t","mode":"voice","moderation_ruleset_id":"r","captions":"srt","timestamps":"on","instructions":"calm"}`,
	`{"model":"openai/tts-1","input":"hello","voice":"alloy","response_format":"mp3","speed":1.25,"instructions":"x","stream_format":"sse"}`,
	`{"model":"tts-1","input":"hello","voice":{"id":"voice_123"}}`,
	`{"model":"tts-1","input":"hello","voice":{"id":"voice_123","x":1}}`,
	`{"model":"tts-1","input":"hello","voice":null}`,
	`{"model":"tts-1","input":"hello","voice":7}`,
	`null`, `[]`, `"x"`, `{}`, `{}{}`, `{} x`, `{}  `, ` {"text":"t"} `, `{"text":"t"`, ``, `   `,
	"\xef\xbb\xbf{}",
	"{\"model\":\"m\",\"voice\":\"v\",\"text\":\"bad \xff utf8\"}",
	// Flat bodies (decodeFlatSpeech), and ones it must leave to jsonv2.
	"{\"model\":\"m\",\"voice\":\"v\",\"text\":\"raw \x01 control\"}",
	"{\"model\":\"m\",\"voice\":\"v\",\"text\":\"tab\tand\nnewline raw\"}",
	`{"model":"m","voice":"v","text":"\u0000 nul"}`,
	`{"model":"m","voice":"v","text":"\uD83D\uDE00 upper, \ud83d\u0041 half"}`,
	`{"model":"m","voice":"v","text":"\ud83d"}`, `{"model":"m","voice":"v","text":"\u12"}`, `{"model":"m","voice":"v","text":"\u12g4"}`,
	`{"model":"m","voice":"v","text":"end\"}`, `{"model":"m","voice":"v","text":"t",}`, `{"model":"m" "voice":"v"}`,
	`{"mo\u0064el":"m","voice":"v","text":"t"}`, `{"model":"m","text":"a","text":"b"}`, `{"text":"t","model":1}`,
	`{"text":"t","instructions":"i","instructions":"j"}`, `{"text":"t","instructions":null}`,
	"\t{ \"text\" :\r\n\"t\" , \"voice\":\"v\"}\n", "{\"text\":\"t\"}\x00", "{\"text\":\"t\"\v}",
	`{"text":"caf\u00e9","model":"elevenlabs/eleven_multilingual_v2","voice":"21m00Tcm4TlvDq8ikWAM"}`,
	// An output the flat decoder reads (scanOutput), and ones it leaves.
	`{"text":"t","output":"m\u0070\u0033"}`, `{"text":"t","output":"mp3","output":"wav"}`, `{"text":"t","output" : { } }`,
	`{"text":"t","output":{"format":"pcm","sampleRate":0}}`, `{"text":"t","output":{"format":"pcm","sampleRate":00}}`,
	`{"text":"t","output":{"format":"pcm","sampleRate":-1}}`, `{"text":"t","output":{"format":"pcm","sampleRate":1e3}}`,
	`{"text":"t","output":{"format":"pcm","sampleRate":123456789}}`, `{"text":"t","output":{"format":"pcm","sampleRate":1234567890}}`,
	`{"text":"t","output":{"format":"pcm","sampleRate":99999999999999999999}}`, `{"text":"t","output":{"format":"pcm","sampleRate":null}}`,
	`{"text":"t","output":{"format":"pcm","bitrate":64,"bitrate":32}}`, `{"text":"t","output":{"format":"a}b"}}`,
	`{"text":"t","output":{"format":"pcm","x":{"y":1}}}`, `{"text":"t","output":{"format":["pcm"]}}`, `{"text":"t","output":{"format":"pcm"}`,
	`{"text":"t","output":{"format":"pcm",}}`, `{"text":"t","output":{"format":"pcm"}}}`, `{"text":"t","output":x{"format":"pcm"}}`,
	"{\"text\":\"t\",\"output\":{\"format\":\"\xff\"}}", `{"text":"t","output":{"format":"pcm","sampleRate":24000 }}`,
	// OpenAI's body as its SDKs send it (decodeFlatOpenAI), and ones left.
	`{"model":"tts-1","input":"Hello there.","voice":"alloy","response_format":"mp3"}`,
	`{"input":"hi","model":"gpt-4o-mini-tts","voice":"coral","instructions":"calm","response_format":"pcm","speed":1.25,"stream_format":"audio"}`,
	`{"input":"hi","speed":1}`, `{"input":"hi","speed":-0.5}`, `{"input":"hi","speed":0}`, `{"input":"hi","speed":-0}`, `{"input":"hi","speed":0.0000000000000000000001}`,
	`{"input":"hi","speed":1e0}`, `{"input":"hi","speed":1.}`, `{"input":"hi","speed":.5}`, `{"input":"hi","speed":01.5}`, `{"input":"hi","speed":1.5.5}`,
	`{"input":"hi","speed":123456789012345678901234567890}`, `{"input":"hi","speed":1,"speed":2}`, `{"input":"hi","speed":null}`, `{"input":"hi","speed":"1"}`,
	`{"input":"hi","voice":{"id":"v"}}`, `{"input":null,"voice":"v"}`, `{"input":"a","input":"b"}`, `{"input":"a","Input":"b"}`, `{"input":"a","extra":"b"}`,
	`{"input":"hi","speed":1.5 }`, `{"input":"hi","speed":-}`, `{"input":"hi","speed":--1}`,
}

// TestFlatSpeechBodies checks that the bodies most clients send take the
// flat decoder, so that the fast path stays taken, and that it declines
// what it cannot decode exactly (FuzzDecodeHot then holds both to the
// same values).
func TestFlatSpeechBodies(t *testing.T) {
	for _, tc := range []struct {
		body string
		flat bool
		text string
	}{
		{`{"model":"openai/tts-1","voice":"alloy","text":"Hello there."}`, true, "Hello there."},
		{` { "voiceId" : "6f1c2d3e-0000-4000-8000-000000000000" , "text" : "a \"quoted\" word\n" } `, true, "a \"quoted\" word\n"},
		{`{"text":"caf\u00e9 \ud83d\ude00"}`, true, "café 😀"},
		{`{}`, true, ""},
		{`{"model":"m","voice":"v","text":"t","output":"mp3"}`, true, "t"},
		{`{"model":"m","voice":"v","text":"t","output":{"format":"pcm","sampleRate":24000}}`, true, "t"},
		{`{"model":"m","voice":"v","text":"t","output":{"format":"pcm","sampleRate":24000.0}}`, false, ""},
		{`{"model":"m","voice":"v","text":"t","output":{"format":"pcm","sampleRate":null}}`, false, ""},
		{`{"model":"m","voice":"v","text":"t","output":{"format":"pcm","extra":"x"}}`, false, ""},
		{`{"model":"m","voice":"v","text":"t","output":null}`, false, ""},
		{`{"model":"m","voice":"v","text":"t","speed":1}`, false, ""},
		{`{"model":"m","model":"n","text":"t"}`, false, ""},
		{`{"model":"m","text":"lone \ud800"}`, false, ""},
		{"{\"text\":\"bad \xff\"}", false, ""},
		{`{"text":"t"} {}`, false, ""},
	} {
		var r speechRequestJSON
		got := decodeFlatSpeech([]byte(tc.body), &r)
		if got != tc.flat {
			t.Errorf("%s: flat %v, want %v", tc.body, got, tc.flat)
			continue
		}
		if !got {
			if !reflect.DeepEqual(r, speechRequestJSON{}) {
				t.Errorf("%s: declined but left %+v", tc.body, r)
			}
			continue
		}
		if text := ""; r.Text != nil && *r.Text != tc.text || r.Text == nil && tc.text != text {
			t.Errorf("%s: text %v, want %q", tc.body, r.Text, tc.text)
		}
		compareDecoders[speechRequestJSON](t, []byte(tc.body), func(r *speechRequestJSON) (any, error) { return r.domain() })
	}
}

// FuzzDecodeHot holds decodeHot to decodeStrict on the speech bodies it
// decodes: the same bodies accepted, with the same values, and the same
// problem for the others. `go test -fuzz FuzzDecodeHot ./gateway/edge`
// searches further than the seeds.
func FuzzDecodeHot(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		compareDecoders[speechRequestJSON](t, body, func(r *speechRequestJSON) (any, error) { return r.domain() })
		compareDecoders[dialect.OpenAISpeech](t, body, nil)
	})
}

// compareDecoders decodes body into a T with both decoders and fails
// when they part; domain, when set, must then agree too.
func compareDecoders[T any](t *testing.T, body []byte, domain func(*T) (any, error)) {
	t.Helper()
	var hot, strict T
	errHot := decodeHot(bytes.Clone(body), &hot)
	errStrict := decodeStrict(bytes.Clone(body), &strict)
	if errHot != nil || errStrict != nil {
		if !sameProblem(errHot, errStrict) {
			t.Fatalf("%q: decodeHot: %v; decodeStrict: %v", body, errHot, errStrict)
		}
		return
	}
	if !reflect.DeepEqual(hot, strict) {
		t.Fatalf("%q: decodeHot %+v, decodeStrict %+v", body, hot, strict)
	}
	if domain == nil {
		return
	}
	dHot, errHot := domain(&hot)
	dStrict, errStrict := domain(&strict)
	if !sameProblem(errHot, errStrict) || !reflect.DeepEqual(dHot, dStrict) {
		t.Fatalf("%q: domain %+v (%v), from decodeStrict %+v (%v)", body, dHot, errHot, dStrict, errStrict)
	}
}

// sameProblem reports whether two decode errors would answer the same.
func sameProblem(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	pa, pb := problem.From(a, ""), problem.From(b, "")
	return bytes.Equal(pa.AppendJSON(nil), pb.AppendJSON(nil))
}

// FuzzScanOutput holds decodeOutput's flat readings of `output` (a string,
// scanOutput's object) to the general decoder's: where the flat reading
// is taken, both give the same value. (FuzzDecodeHot cannot see this:
// both of its decoders keep `output` raw and decode it with decodeOutput.)
func FuzzScanOutput(f *testing.F) {
	for _, s := range []string{`"mp3"`, `"m\u0070\u0033"`, `{"format":"pcm"}`, `{"format":"mp3","sampleRate":44100,"bitrate":128}`,
		`{ "bitrate" : 0 , "format" : "" }`, `{}`, `{"sampleRate":007}`, `{"sampleRate":1.5}`, `{"format":"pcm","format":"wav"}`,
		`{"Format":"pcm"}`, `{"bitrate":64,"bitrate":32}`, `{"format":"\u00e9"}`, `{"sampleRate":999999999}`, `{"sampleRate":9999999999}`, `"\ud800"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		t.Logf("%q", b)
		if len(b) == 0 {
			return
		}
		var flat any
		if b[0] == '"' {
			if format, next, ok := scanString(b, 0); ok && next == len(b) {
				flat = (&outputJSON{Format: format}).domain()
			}
		} else if o, ok := scanOutput(b); ok {
			flat = o.domain()
		}
		if flat == nil {
			return
		}
		general, err := decodeOutputGeneral(b)
		if err != nil || !reflect.DeepEqual(flat, general) {
			t.Fatalf("flat %+v; general %+v (%v)", flat, general, err)
		}
	})
}

// TestFlatOpenAIBodies checks that the bodies the OpenAI SDKs send take
// the flat decoder (decodeFlatOpenAI), so that the fast path stays taken,
// and that it declines what it cannot decode exactly.
func TestFlatOpenAIBodies(t *testing.T) {
	for _, tc := range []struct {
		body string
		flat bool
	}{
		{`{"model":"tts-1","input":"Hello there.","voice":"alloy","response_format":"mp3"}`, true},
		{`{"input":"hi","model":"gpt-4o-mini-tts","voice":"coral","speed":1.25,"stream_format":"sse","instructions":"calm"}`, true},
		{`{"input":"hi","voice":{"id":"voice_123"}}`, false},
		{`{"input":"hi","speed":1e0}`, false},
		{`{"input":"hi","speed":null}`, false},
		{`{"input":"hi","stream":true}`, false},
	} {
		var r dialect.OpenAISpeech
		if got := decodeFlatOpenAI([]byte(tc.body), &r); got != tc.flat {
			t.Errorf("%s: flat %v, want %v", tc.body, got, tc.flat)
		} else if !got && !reflect.DeepEqual(r, dialect.OpenAISpeech{}) {
			t.Errorf("%s: declined but left %+v", tc.body, r)
		}
		compareDecoders[dialect.OpenAISpeech](t, []byte(tc.body), nil)
	}
}

// FuzzDecodeLenient holds decodeLenient's flat reading of ElevenLabs'
// body to encoding/json's, which the ElevenLabs dialect decoded with
// alone: the same bodies accepted, with the same values, the same
// problem for the others.
func FuzzDecodeLenient(f *testing.F) {
	for _, s := range []string{
		`{"text":"Hello there.","model_id":"eleven_multilingual_v2"}`,
		`{"text":"hi","model_id":"m","language_code":"en","previous_text":"a","next_text":"b","apply_text_normalization":"auto"}`,
		`{"text":"hi","TEXT":"ho"}`, `{"Text":"hi"}`, `{"text":"a","text":"b"}`, `{"text":"hi","unknown":"x"}`, `{"text":"hi","unknown":[1]}`,
		`{"text":"hi","voice_settings":{"stability":0.5}}`, `{"text":null}`, `{"text":"caf\u00e9 \ud83d\ude00"}`, `{"text":"\ud800"}`,
		"{\"text\":\"\xff\"}", `{"text":"\u0000"}`, `{"text":"hi"} x`, `{}`, `[]`, `null`, `{"model_id":1}`, `{"seed":5,"text":"t"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var flat, general dialect.ElevenLabsSpeech
		errFlat := decodeLenient(bytes.Clone(body), &flat)
		var errGeneral error
		if err := json.Unmarshal(bytes.Clone(body), &general); err != nil {
			errGeneral = jsonProblem(err)
		} else {
			errGeneral = checkText(body)
		}
		if errFlat != nil || errGeneral != nil {
			if !sameProblem(errFlat, errGeneral) {
				t.Fatalf("%q: decodeLenient: %v; encoding/json: %v", body, errFlat, errGeneral)
			}
			return
		}
		if !reflect.DeepEqual(flat, general) {
			t.Fatalf("%q: decodeLenient %+v, encoding/json %+v", body, flat, general)
		}
	})
}

// TestFlatElevenLabsBodies checks that the ElevenLabs SDK's body takes the
// flat decoder, and that it declines what the lenient decoder reads
// differently.
func TestFlatElevenLabsBodies(t *testing.T) {
	for _, tc := range []struct {
		body string
		flat bool
	}{
		{`{"text":"Hello there.","model_id":"eleven_multilingual_v2"}`, true},
		{`{"text":"hi","language_code":"en"}`, true},
		{`{"text":"hi","Model_ID":"m"}`, false},
		{`{"text":"hi","unknown":"x"}`, false},
		{`{"text":"hi","voice_settings":{"stability":0.5}}`, false},
	} {
		var r dialect.ElevenLabsSpeech
		if got := decodeFlatElevenLabs([]byte(tc.body), &r); got != tc.flat {
			t.Errorf("%s: flat %v, want %v", tc.body, got, tc.flat)
		} else if !got && !reflect.DeepEqual(r, dialect.ElevenLabsSpeech{}) {
			t.Errorf("%s: declined but left %+v", tc.body, r)
		}
	}
}
