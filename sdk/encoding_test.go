package sdk

import (
	"reflect"
	"testing"
)

func TestEncodingString(t *testing.T) {
	tests := []struct {
		e    Encoding
		want string
	}{
		{Encoding{Format: FormatPCM, SampleRate: 24000}, "pcm_24000"},
		{Encoding{Format: FormatMP3, SampleRate: 44100, Bitrate: 128}, "mp3_44100_128"},
		{Encoding{Format: FormatOpus}, "opus"},
		{Encoding{Format: FormatOpus, Bitrate: 32}, "opus_0_32"},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("%#v: %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestNativeEncodings(t *testing.T) {
	tests := []struct {
		name string
		m    Model
		want []Encoding
	}{
		{"listed", Model{Encodings: []Encoding{{FormatMP3, 44100, 128}}, OutputFormats: []string{FormatPCM}},
			[]Encoding{{FormatMP3, 44100, 128}}},
		{"derived: native rate first, then the listed ones", Model{OutputFormats: []string{FormatPCM, FormatMP3, FormatWAV}, SampleRates: []int{16000, 24000}, NativeSampleRate: 24000},
			[]Encoding{{FormatPCM, 24000, 0}, {FormatPCM, 16000, 0}, {FormatMP3, 24000, 0}, {FormatWAV, 24000, 0}, {FormatWAV, 16000, 0}}},
		{"derived: no rate known", Model{OutputFormats: []string{FormatWAV}},
			[]Encoding{{FormatWAV, 0, 0}}},
	}
	for _, tt := range tests {
		if got := tt.m.NativeEncodings(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFindEncoding(t *testing.T) {
	m := Model{Encodings: []Encoding{
		{FormatMP3, 44100, 128}, {FormatMP3, 22050, 32}, {FormatMP3, 44100, 64},
		{FormatPCM, 24000, 0}, {FormatPCM, 16000, 0}, {FormatOpus, 0, 0},
	}}
	tests := []struct {
		format        string
		rate, bitrate int
		want          Encoding
		ok            bool
	}{
		{FormatMP3, 0, 0, Encoding{FormatMP3, 44100, 128}, true},
		{FormatMP3, 22050, 0, Encoding{FormatMP3, 22050, 32}, true},
		{FormatMP3, 0, 64, Encoding{FormatMP3, 44100, 64}, true},
		{FormatMP3, 44100, 96, Encoding{}, false},
		{FormatPCM, 0, 0, Encoding{FormatPCM, 24000, 0}, true},
		{FormatPCM, 16000, 0, Encoding{FormatPCM, 16000, 0}, true},
		{FormatPCM, 8000, 0, Encoding{}, false},
		{FormatOpus, 0, 0, Encoding{FormatOpus, 0, 0}, true},
		{FormatOpus, 48000, 0, Encoding{}, false},
		{FormatWAV, 0, 0, Encoding{}, false},
	}
	for _, tt := range tests {
		got, ok := m.FindEncoding(tt.format, tt.rate, tt.bitrate)
		if got != tt.want || ok != tt.ok {
			t.Errorf("FindEncoding(%s, %d, %d) = %v, %v; want %v, %v", tt.format, tt.rate, tt.bitrate, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDescribeEncodings(t *testing.T) {
	m := Model{Encodings: []Encoding{{FormatMP3, 44100, 128}, {FormatPCM, 16000, 0}, {FormatPCM, 24000, 0}, {FormatMP3, 22050, 32}}}
	m.describeEncodings()
	if !reflect.DeepEqual(m.OutputFormats, []string{FormatMP3, FormatPCM}) || !reflect.DeepEqual(m.SampleRates, []int{16000, 24000}) || m.NativeSampleRate != 16000 {
		t.Errorf("derived %v %v %d", m.OutputFormats, m.SampleRates, m.NativeSampleRate)
	}
}
