package soxr

import (
	"math"
	"testing"
)

func TestResample(t *testing.T) {
	in := make([]float32, 44100)
	for i := range in {
		in[i] = float32(0.5 * math.Sin(2*math.Pi*1000*float64(i)/44100))
	}
	tests := []struct {
		name          string
		in            []float32
		from, to, len int
		wantErr       bool
	}{
		{"down", in, 44100, 16000, 16000, false},
		{"up", in[:22050], 22050, 48000, 48000, false},
		{"odd lengths round", in[:1001], 44100, 16000, 363, false},
		{"empty", nil, 8000, 16000, 0, false},
		{"zero in rate", in, 0, 16000, 0, true},
		{"negative out rate", in, 44100, -1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Resample(tt.in, tt.from, tt.to)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && len(out) != tt.len {
				t.Errorf("len %d, want %d", len(out), tt.len)
			}
		})
	}
	// The middle of the 1 kHz tone at 16 kHz still has its peak amplitude.
	out, _ := Resample(in, 44100, 16000)
	var peak float32
	for _, x := range out[1000:15000] {
		peak = max(peak, x)
	}
	if math.Abs(float64(peak)-0.5) > 0.01 {
		t.Errorf("peak %v after resampling, want 0.5", peak)
	}
}
