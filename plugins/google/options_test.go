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
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"temperature": 2.5}`:       "temperature",
		`{"seed": 4294967296}`:       "seed",
		`{"languageCode": "en_US!"}`: "languageCode",
		`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}]}}`:                                                                                    "multiSpeakerVoiceConfig.speakerVoiceConfigs",
		`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}, {"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}]}}`: "multiSpeakerVoiceConfig.speakerVoiceConfigs.1.speaker",
		`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}, {"speaker": "Jane"}]}}`:                                                               "multiSpeakerVoiceConfig.speakerVoiceConfigs.1.voiceConfig.prebuiltVoiceConfig.voiceName",
		`{"topK": 3}`: "topK",
	}, []string{
		`{"temperature": 0, "seed": -2147483648, "languageCode": "en-US"}`,
		`{"temperature": 2, "seed": 2147483647}`,
		`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}, {"speaker": "Jane", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}]}}`,
	})
}
