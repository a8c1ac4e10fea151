package align

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAlign aligns about 60 s of speech (eSpeak's en-us+f3 at 1.1x,
// 24 kHz like a cloud provider's PCM) against the gateway's two
// references of the same text: the whole of the aligner's work for a
// minute of a provider's audio, the references' rendering excepted (that
// is eSpeak's, in its plugin process). It reports the CPU time per 60 s
// of audio (cpu_s/60s, the budget is 0.5) and the ratio to real time.
func BenchmarkAlign(b *testing.B) {
	p := espeakPlugin(b)
	text := strings.Join(passages, " ") + " " + strings.Join(passages[:3], " ")
	refs, _ := references(b, p, text, "en")
	c := render(b, p, text, "en-us+f3", 1.1)
	clip, err := resampleTo(c.clip, 24000)
	if err != nil {
		b.Fatal(err)
	}
	seconds := clip.Seconds()
	b.Logf("clip %.1f s, references %.1f s and %.1f s", seconds, refs[0].Clip.Seconds(), refs[1].Clip.Seconds())
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Align(clip, refs...); err != nil {
			b.Fatal(err)
		}
	}
	cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
	b.ReportMetric(cpu*60/seconds, "cpu_s/60s")
	b.ReportMetric(seconds/cpu, "x_realtime")
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReferences renders the two references of about 60 s of speech
// through the eSpeak plugin, the other half of an alignment's cost: it
// runs in the plugin's process, so it is reported as wall time per 60 s
// of reference audio (wall_s/60s), on an otherwise idle plugin.
func BenchmarkReferences(b *testing.B) {
	p := espeakPlugin(b)
	text := strings.Join(passages, " ") + " " + strings.Join(passages[:3], " ")
	seconds := 0.0
	for b.Loop() {
		refs, _ := references(b, p, text, "en")
		seconds = refs[0].Clip.Seconds()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*60/seconds, "wall_s/60s")
}
