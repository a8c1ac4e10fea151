package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/google"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Google
// documents (the Gemini API reference) are refused naming the field, and Google is not
// called; the values at the edges of each range reach it.
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	for _, tt := range []struct{ options, field string }{
		{`{"temperature": 2.5}`, "temperature"},
		{`{"seed": 4294967296}`, "seed"},
		{`{"languageCode": "en_US!"}`, "languageCode"},
		{`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}]}}`, "multiSpeakerVoiceConfig.speakerVoiceConfigs"},
		{`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}, {"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}]}}`, "multiSpeakerVoiceConfig.speakerVoiceConfigs.1.speaker"},
		{`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}, {"speaker": "Jane"}]}}`, "multiSpeakerVoiceConfig.speakerVoiceConfigs.1.voiceConfig.prebuiltVoiceConfig.voiceName"},
		{`{"topK": 3}`, "topK"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Google for refused options", n)
	}
	for _, options := range []string{
		`{"temperature": 0, "seed": -2147483648, "languageCode": "en-US"}`,
		`{"temperature": 2, "seed": 2147483647}`,
		`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}, {"speaker": "Jane", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}]}}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
