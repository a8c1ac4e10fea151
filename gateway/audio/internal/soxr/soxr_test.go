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

// TestStreamMatchesResample feeds a clip in uneven chunks and checks that
// the stream's output equals the one-shot resampler's, sample for sample
// in length and to float rounding in value.
func TestStreamMatchesResample(t *testing.T) {
	in := make([]float32, 30011)
	for i := range in {
		in[i] = float32(0.4*math.Sin(2*math.Pi*440*float64(i)/22050) + 0.2*math.Sin(2*math.Pi*3000*float64(i)/22050))
	}
	for _, tt := range []struct{ from, to, chunk, outChunk int }{
		{22050, 48000, 1000, 777}, {22050, 8000, 4096, 100}, {48000, 44100, 1, 5}, {16000, 16001, 333, 4096},
	} {
		want, err := Resample(in, tt.from, tt.to)
		if err != nil {
			t.Fatal(err)
		}
		st, err := NewStream(tt.from, tt.to)
		if err != nil {
			t.Fatal(err)
		}
		var got []float32
		buf := make([]float32, tt.outChunk)
		for p := 0; p < len(in); {
			c, n, err := st.Process(in[p:min(p+tt.chunk, len(in))], buf)
			if err != nil {
				t.Fatal(err)
			}
			p += c
			got = append(got, buf[:n]...)
		}
		for {
			_, n, err := st.Process(nil, buf)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			got = append(got, buf[:n]...)
		}
		st.Close()
		if len(got) != len(want) {
			t.Fatalf("%d -> %d: %d samples, one-shot %d", tt.from, tt.to, len(got), len(want))
		}
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-4 {
				t.Fatalf("%d -> %d: sample %d is %g, one-shot %g", tt.from, tt.to, i, got[i], want[i])
			}
		}
	}
}
