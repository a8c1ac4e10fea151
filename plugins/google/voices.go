package main

import "github.com/voxgate/voxgate/sdk"

// prebuiltVoices are the 30 voices of the speech-generation guide, each
// with the one-word character the guide gives it. Every TTS model takes
// every voice, and each voice speaks every supported language (the models
// detect the language of the text), so Language stays empty. Google
// publishes no voice list endpoint for the Gemini API, so this table is
// the list.
func prebuiltVoices() []sdk.Voice {
	table := [][2]string{
		{"Zephyr", "Bright"}, {"Puck", "Upbeat"}, {"Charon", "Informative"},
		{"Kore", "Firm"}, {"Fenrir", "Excitable"}, {"Leda", "Youthful"},
		{"Orus", "Firm"}, {"Aoede", "Breezy"}, {"Callirrhoe", "Easy-going"},
		{"Autonoe", "Bright"}, {"Enceladus", "Breathy"}, {"Iapetus", "Clear"},
		{"Umbriel", "Easy-going"}, {"Algieba", "Smooth"}, {"Despina", "Smooth"},
		{"Erinome", "Clear"}, {"Algenib", "Gravelly"}, {"Rasalgethi", "Informative"},
		{"Laomedeia", "Upbeat"}, {"Achernar", "Soft"}, {"Alnilam", "Firm"},
		{"Schedar", "Even"}, {"Gacrux", "Mature"}, {"Pulcherrima", "Forward"},
		{"Achird", "Friendly"}, {"Zubenelgenubi", "Casual"}, {"Vindemiatrix", "Gentle"},
		{"Sadachbia", "Lively"}, {"Sadaltager", "Knowledgeable"}, {"Sulafat", "Warm"},
	}
	voices := make([]sdk.Voice, len(table))
	for i, v := range table {
		voices[i] = sdk.Voice{ID: v[0], Name: v[0] + " (" + v[1] + ")"}
	}
	return voices
}
