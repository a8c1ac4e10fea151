package lame

import (
	"math"
	"testing"
)

func TestEncode(t *testing.T) {
	tone := make([]float32, 24000)
	for i := range tone {
		tone[i] = float32(0.5 * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	tests := []struct {
		name             string
		samples          []float32
		rate, kbps       int
		wantErr, wantTag bool
	}{
		{"tone 24k 96k", tone, 24000, 96, false, true},
		{"tone 24k 32k has no room for LAME's tag", tone, 24000, 32, false, false},
		{"empty clip", nil, 44100, 128, false, true},
		{"zero rate", tone, 0, 96, true, false},
		{"zero bitrate", tone, 24000, 0, true, false},
		{"rate MPEG cannot carry", tone, 96000, 96, true, false},
		{"bitrate MPEG-2 cannot carry", tone, 24000, 320, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Encode(tt.samples, tt.rate, tt.kbps, 5)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(res.Data) < 4 || res.Data[0] != 0xFF || res.Data[1]&0xE0 != 0xE0 {
				t.Fatalf("output does not start with an MPEG frame: % x", res.Data[:min(4, len(res.Data))])
			}
			if res.Delay != 576 || res.Padding <= 0 {
				t.Errorf("delay %d, padding %d", res.Delay, res.Padding)
			}
			side := 9 // MPEG-2 mono
			if tt.rate >= 32000 {
				side = 17
			}
			tag := string(res.Data[4+side : 4+side+4])
			if got := tag == "Info"; got != tt.wantTag {
				t.Errorf("Info tag present = %v (%q), want %v", got, tag, tt.wantTag)
			}
		})
	}
}
