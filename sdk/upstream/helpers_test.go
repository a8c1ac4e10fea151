package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(map[string]string{
		"base_url": "https://example.test/v1/", "timeout": "45s", "connect_timeout": "2s",
		"max_attempts": "5", "max_idle_conns": "16", "organization": "ignored here",
	}, "https://default.test")
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		BaseURL: "https://example.test/v1", Timeout: 45 * time.Second, MaxAttempts: 5,
		Client: ClientOptions{DialTimeout: 2 * time.Second, TLSHandshakeTimeout: 2 * time.Second, ResponseHeaderTimeout: 45 * time.Second, MaxIdleConnsPerHost: 16},
	}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if s, err := ParseSettings(nil, "https://default.test/"); err != nil || s.BaseURL != "https://default.test" {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	for _, bad := range []map[string]string{
		{"base_url": "ftp://x"}, {"base_url": "/relative"}, {"timeout": "5"}, {"timeout": "-1s"},
		{"max_attempts": "0"}, {"max_idle_conns": "many"},
	} {
		if _, err := ParseSettings(bad, "https://default.test"); err == nil {
			t.Errorf("ParseSettings(%v) accepted it", bad)
		}
	}
	if !IsSettingKey("timeout") || IsSettingKey("organization") {
		t.Error("IsSettingKey")
	}
}

func TestDecodeOptions(t *testing.T) {
	type locator struct {
		ID string `json:"id"`
	}
	type settings struct {
		Speed *float64 `json:"speed"`
	}
	type opts struct {
		Instructions *string            `json:"instructions"`
		Seed         *int               `json:"seed"`
		Settings     *settings          `json:"voice_settings"`
		Locators     []locator          `json:"locators"`
		Labels       map[string]string  `json:"labels"`
		Nested       map[string]locator `json:"nested"`
	}
	accepted := []string{"instructions", "seed", "voice_settings", "locators", "labels", "nested"}
	tests := []struct {
		raw     string
		wantErr string // "" for success
		field   string // the Field of the error
	}{
		{``, "", ""},
		{`null`, "", ""},
		{`{}`, "", ""},
		{` {"instructions": "calm", "Seed": 3, "voice_settings": {"speed": 1}, "labels": {"any": "key"}} `, "", ""},
		{`{"temperature": 1}`, `providerOptions field "temperature" is not supported; accepted: instructions, seed, voice_settings`, "temperature"},
		{`{"seed": 1, "voice_settings": {"pitch": 1}}`, `providerOptions field "voice_settings.pitch" is not supported`, "voice_settings.pitch"},
		{`{"locators": [{"id": "a"}, {"id": "b", "version": 2}]}`, `"locators.1.version" is not supported`, "locators.1.version"},
		{`{"nested": {"k": {"id": "a", "x": 1}}}`, `"nested.k.x" is not supported`, "nested.k.x"},
		{`{"seed": "three"}`, `providerOptions field "seed" must be a JSON number`, "seed"},
		{`{"voice_settings": {"speed": "fast"}}`, `providerOptions field "voice_settings.speed" must be a JSON number`, "voice_settings.speed"},
		{`[1]`, "must be a JSON object", ""},
		{`{"seed": 1} {"seed": 2}`, "must be a JSON object", ""},
	}
	for _, tt := range tests {
		var o opts
		err := DecodeOptions("acme", []byte(tt.raw), &o, accepted...)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.raw, err)
			}
			continue
		}
		var e *sdk.Error
		if !errors.As(err, &e) || e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, tt.wantErr) || !strings.HasPrefix(e.Message, "acme: ") {
			t.Errorf("%s: got %v, want invalid_request with %q", tt.raw, err, tt.wantErr)
		}
		if e != nil && e.Field != tt.field {
			t.Errorf("%s: field %q, want %q", tt.raw, e.Field, tt.field)
		}
	}
}

func TestCheck(t *testing.T) {
	f, i, s := 1.5, int64(4294967296), "sometimes"
	ok, in := 1.0, "on"
	tests := []struct {
		name  string
		check func(c *Check)
		field string // "" when every check passes
		has   string
	}{
		{"all pass", func(c *Check) {
			InRange(c, "speed", &ok, 0.7, 1.2)
			InRange[int64](c, "seed", nil, 0, 4294967295)
			c.OneOf("norm", &in, "auto", "on", "off")
			c.OneOf("norm", nil, "auto")
			c.MaxItems("ids", 3, 3)
			c.NotEmpty("text", &in)
		}, "", ""},
		{"a number out of range", func(c *Check) { InRange(c, "voice_settings.speed", &f, 0.7, 1.2) }, "voice_settings.speed", "between 0.7 and 1.2, got 1.5"},
		{"an integer out of range", func(c *Check) { InRange(c, "seed", &i, 0, 4294967295) }, "seed", "between 0 and 4294967295, got 4294967296"},
		{"not in the enumeration", func(c *Check) { c.OneOf("apply_text_normalization", &s, "auto", "on", "off") }, "apply_text_normalization", `one of auto, on, off, got "sometimes"`},
		{"too many items", func(c *Check) { c.MaxItems("locators", 4, 3) }, "locators", "at most 3 items, got 4"},
		{"the first failure wins", func(c *Check) {
			c.MaxItems("locators", 4, 3)
			InRange(c, "speed", &f, 0.7, 1.2)
		}, "locators", "at most 3"},
	}
	for _, tt := range tests {
		c := NewCheck("acme")
		tt.check(c)
		err := c.Err()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var e *sdk.Error
		if !errors.As(err, &e) || e.Kind != sdk.KindInvalidRequest || e.Field != tt.field || !strings.Contains(e.Message, tt.has) ||
			!strings.HasPrefix(e.Message, "acme: providerOptions field "+tt.field+" ") {
			t.Errorf("%s: got %#v, want field %s with %q", tt.name, err, tt.field, tt.has)
		}
	}
}

func TestWAVHeader(t *testing.T) {
	pcm := make([]byte, 2*16000)
	clip, err := sdktest.Decode("audio/wav", append(WAVHeader(16000, uint32(len(pcm))), pcm...))
	if err != nil || clip.SampleRate != 16000 || clip.Frames != 16000 {
		t.Errorf("sized: %+v, %v", clip, err)
	}
	clip, err = sdktest.Decode("audio/wav", append(WAVHeader(24000, StreamingWAV), pcm...))
	if err != nil || clip.Frames != 16000 {
		t.Errorf("streaming: %+v, %v", clip, err)
	}
}

func TestSampleFile(t *testing.T) {
	tests := []struct {
		sample          sdk.Sample
		name, mediaType string
		dataLen         int
	}{
		{sdk.Sample{MediaType: "audio/pcm;rate=22050", Data: make([]byte, 100)}, "sample-3.wav", "audio/wav", 144},
		{sdk.Sample{Filename: "me.pcm", MediaType: "audio/pcm;rate=22050", Data: make([]byte, 100)}, "me.wav", "audio/wav", 144},
		{sdk.Sample{MediaType: "audio/mpeg", Data: make([]byte, 10)}, "sample-3.mp3", "audio/mpeg", 10},
		{sdk.Sample{Filename: "take.flac", MediaType: "audio/flac", Data: make([]byte, 10)}, "take.flac", "audio/flac", 10},
		{sdk.Sample{Data: make([]byte, 10)}, "sample-3.bin", "application/octet-stream", 10},
	}
	for _, tt := range tests {
		name, mt, data := SampleFile(tt.sample, 2)
		if name != tt.name || mt != tt.mediaType || len(data) != tt.dataLen {
			t.Errorf("SampleFile(%q, %q) = %q, %q, %d bytes; want %q, %q, %d", tt.sample.Filename, tt.sample.MediaType, name, mt, len(data), tt.name, tt.mediaType, tt.dataLen)
		}
	}
}

func TestBodyError(t *testing.T) {
	var syntax *json.SyntaxError
	_ = json.Unmarshal([]byte("{"), &struct{}{})
	err := json.Unmarshal([]byte("nope"), &struct{}{})
	if !errors.As(err, &syntax) {
		t.Fatal("no syntax error to test with")
	}
	if e := BodyError(t.Context(), "acme", "voice list", err); e.Kind != sdk.KindUpstream || !strings.Contains(e.Message, "voice list") {
		t.Errorf("malformed JSON: %+v", e)
	}
	if e := BodyError(t.Context(), "acme", "x", io.ErrUnexpectedEOF); e.Kind != sdk.KindUnavailable {
		t.Errorf("cut short: %+v", e)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if e := BodyError(ctx, "acme", "x", errors.New("read on closed body")); !errors.Is(e, context.Canceled) {
		t.Errorf("cancelled: %+v", e)
	}
}
