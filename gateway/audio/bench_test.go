package audio

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

// benchSeconds is the clip length of every benchmark: a long answer.
const benchSeconds = 60

// benchSpeech returns 60 s of real eSpeak speech at rate.
func benchSpeech(b testing.TB, rate int) *Clip {
	b.Helper()
	c, err := Resample(speechClip(b, benchSeconds), rate)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// reportRealtime reports how many seconds of audio one second of CPU
// processes.
func reportRealtime(b *testing.B, audioSeconds float64) {
	b.ReportMetric(audioSeconds*float64(b.N)/b.Elapsed().Seconds(), "x_realtime")
}

// cpuTime is the process's user and system CPU time so far (rusage).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRealtimeCPU reports how many seconds of audio one second of the
// process's CPU time (since start, from cpuTime) processes: on a shared
// machine wall time counts the other processes' turns, CPU time does not
// (run with -cpu 1 for one core's figure).
func reportRealtimeCPU(b *testing.B, start time.Duration, audioSeconds float64) {
	b.ReportMetric(audioSeconds*float64(b.N)/(cpuTime(b)-start).Seconds(), "x_realtime_cpu")
}

// BenchmarkNormalizeWAV levels a 60 s clip and encodes it as WAV, the work
// of a speech request with volumeDbfs and WAV output. -20 dBFS needs a
// little limiting on eSpeak speech; -10 dBFS needs the hot chain.
func BenchmarkNormalizeWAV(b *testing.B) {
	for _, rate := range []int{24000, 48000} {
		src := benchSpeech(b, rate)
		for _, target := range []float64{-20, -10} {
			b.Run(fmt.Sprintf("%dHz/%gdBFS", rate, target), func(b *testing.B) {
				work := &Clip{Rate: rate, Samples: make([]float32, len(src.Samples))}
				for b.Loop() {
					copy(work.Samples, src.Samples)
					Normalize(work, target)
					if _, _, err := Encode(work, Output{Format: FormatWAV}); err != nil {
						b.Fatal(err)
					}
				}
				reportRealtime(b, benchSeconds)
			})
		}
	}
}

func BenchmarkResample(b *testing.B) {
	for _, tt := range []struct{ from, to int }{{22050, 48000}, {48000, 16000}, {24000, 16000}} {
		src := benchSpeech(b, tt.from)
		b.Run(fmt.Sprintf("%dto%d", tt.from, tt.to), func(b *testing.B) {
			for b.Loop() {
				if _, err := Resample(src, tt.to); err != nil {
					b.Fatal(err)
				}
			}
			reportRealtime(b, benchSeconds)
		})
	}
}

func BenchmarkEncodeMP3(b *testing.B) {
	for _, tt := range []struct{ rate, kbps int }{{24000, 96}, {48000, 96}, {48000, 192}} {
		src := benchSpeech(b, tt.rate)
		b.Run(fmt.Sprintf("%dHz/%dkbps", tt.rate, tt.kbps), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Encode(src, Output{Format: FormatMP3, Bitrate: tt.kbps}); err != nil {
					b.Fatal(err)
				}
			}
			reportRealtime(b, benchSeconds)
		})
	}
}

func BenchmarkDecodeMP3(b *testing.B) {
	for _, rate := range []int{24000, 48000} {
		data, mt, err := Encode(benchSpeech(b, rate), Output{Format: FormatMP3})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dHz", rate), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data, mt); err != nil {
					b.Fatal(err)
				}
			}
			reportRealtime(b, benchSeconds)
		})
	}
}

// BenchmarkProcess is a whole speech request's audio work: eSpeak's
// 22050 Hz WAV to MP3 at 24 kHz, leveled to -20 dBFS.
func BenchmarkProcess(b *testing.B) {
	src := benchSpeech(b, 22050)
	wav, _, err := Encode(src, Output{Format: FormatWAV})
	if err != nil {
		b.Fatal(err)
	}
	p := Params{VolumeDbfs: ptr(-20.0), Output: &OutputParams{Format: FormatMP3, SampleRate: ptr(24000)}}
	for b.Loop() {
		if _, _, err := Process(slices.Clip(wav), "audio/wav", p, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	reportRealtime(b, benchSeconds)
}

// BenchmarkNormalizeLoudness measures and levels a 60 s clip to an EBU
// R128 target (libebur128's gating, the true-peak envelope, the limiter
// and its gain search), the work the loudness field adds to a speech
// request before encoding. -23 LUFS needs little limiting on eSpeak
// speech; -14 LUFS under -1 dBTP limits its loudest peaks by some 10 dB.
// The target is 500x real time on one core.
func BenchmarkNormalizeLoudness(b *testing.B) {
	for _, rate := range []int{22050, 24000, 48000} {
		src := benchSpeech(b, rate)
		for _, lufs := range []float64{-23, -16, -14} {
			b.Run(fmt.Sprintf("%dHz/%gLUFS", rate, lufs), func(b *testing.B) {
				work := &Clip{Rate: rate, Samples: make([]float32, len(src.Samples))}
				cpu := cpuTime(b)
				for b.Loop() {
					copy(work.Samples, src.Samples)
					if _, err := NormalizeLoudness(work, LoudnessTarget{Integrated: lufs, TruePeak: -1}, 0); err != nil {
						b.Fatal(err)
					}
				}
				reportRealtime(b, benchSeconds)
				reportRealtimeCPU(b, cpu, benchSeconds)
			})
		}
	}
}

// BenchmarkMeasureLoudness is the measuring alone (libebur128's gated
// integrated loudness and the oversampled true peak).
func BenchmarkMeasureLoudness(b *testing.B) {
	src := benchSpeech(b, 24000)
	cpu := cpuTime(b)
	for b.Loop() {
		if _, _, err := MeasureLoudness(src); err != nil {
			b.Fatal(err)
		}
	}
	reportRealtime(b, benchSeconds)
	reportRealtimeCPU(b, cpu, benchSeconds)
}

// BenchmarkStreamLeveler levels 60 s of speech in 20 ms chunks as a
// stream's chunks pass, with the voice's loudness known: the true-peak
// points, the 5 ms look-ahead limiter, the meters of what comes in (to
// learn) and of what is sent (the running correction).
func BenchmarkStreamLeveler(b *testing.B) {
	src := benchSpeech(b, 24000)
	step := 24000 / 50
	out := make([]float32, 0, step+256)
	cpu := cpuTime(b)
	for b.Loop() {
		l, err := NewStreamLeveler(24000, LoudnessTarget{Integrated: -16, TruePeak: -1}, -20, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(src.Samples); i += step {
			if out, err = l.Write(src.Samples[i:min(i+step, len(src.Samples))], out[:0]); err != nil {
				b.Fatal(err)
			}
		}
		out = l.Flush(out[:0])
		l.Close()
	}
	reportRealtime(b, benchSeconds)
	reportRealtimeCPU(b, cpu, benchSeconds)
}

// BenchmarkEncodeLoudness levels 60 s of speech to -16 LUFS and encodes
// it as a lossy answer: MP3 and Opus are measured after encoding (decoded
// again by the gateway) and leveled again when off the target.
func BenchmarkEncodeLoudness(b *testing.B) {
	src := benchSpeech(b, 24000)
	for _, f := range []string{FormatMP3, FormatOpus} {
		b.Run(f, func(b *testing.B) {
			work := &Clip{Rate: src.Rate, Samples: make([]float32, len(src.Samples))}
			cpu := cpuTime(b)
			for b.Loop() {
				copy(work.Samples, src.Samples)
				if _, _, _, err := EncodeLoudness(work, LoudnessTarget{Integrated: -16, TruePeak: -1}, Output{Format: f}, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			reportRealtime(b, benchSeconds)
			reportRealtimeCPU(b, cpu, benchSeconds)
		})
	}
}

// BenchmarkLevelLong plans the leveling of 60 s of speech as a job's
// file is (its chunk files fed a piece at a time) to -16 LUFS under -1
// dBTP, which eSpeak reaches only with the limiter: the measuring pass
// and the trial passes, each through a FixedLeveler and a meter.
func BenchmarkLevelLong(b *testing.B) {
	src := benchSpeech(b, 24000)
	replay := func(f func([]float32) error) error {
		for i := 0; i < len(src.Samples); i += 8192 {
			if err := f(src.Samples[i:min(i+8192, len(src.Samples))]); err != nil {
				return err
			}
		}
		return nil
	}
	cpu := cpuTime(b)
	passes := 0
	for b.Loop() {
		plan, err := LevelLong(24000, LoudnessTarget{Integrated: -16, TruePeak: -1}, EncoderHeadroomDb(FormatOpus), replay)
		if err != nil {
			b.Fatal(err)
		}
		passes = plan.Passes
	}
	b.ReportMetric(float64(passes), "passes")
	reportRealtime(b, benchSeconds)
	reportRealtimeCPU(b, cpu, benchSeconds)
}
