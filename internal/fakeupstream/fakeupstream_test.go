package fakeupstream

import (
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk/sdktest"
)

func TestSpeak(t *testing.T) {
	u := Speak(" Hi  there ", 2)
	per := CharSeconds / 2
	if len(u.Chars) != 11 {
		t.Fatalf("%d chars", len(u.Chars))
	}
	want := []Span{{"Hi", EdgeSeconds + per, EdgeSeconds + 3*per}, {"there", EdgeSeconds + 5*per, EdgeSeconds + 10*per}}
	if len(u.Words) != len(want) {
		t.Fatalf("words %+v", u.Words)
	}
	for i, w := range want {
		got := u.Words[i]
		if got.Text != w.Text || math.Abs(got.Start-w.Start) > 1e-12 || math.Abs(got.End-w.End) > 1e-12 {
			t.Errorf("word %d = %+v, want %+v", i, got, w)
		}
	}
	if wantLen := 2*EdgeSeconds + 11*per; math.Abs(u.Seconds-wantLen) > 1e-12 {
		t.Errorf("%.4f s, want %.4f", u.Seconds, wantLen)
	}
	if slow := Speak(" Hi  there ", 0); math.Abs(slow.Seconds-(2*EdgeSeconds+11*CharSeconds)) > 1e-12 {
		t.Errorf("speed 0 is not speed 1: %.4f s", slow.Seconds)
	}
}

// TestStudioAudioDecodes checks every rendering with the conformance kit's
// decoder: the fakes' audio is what plugins hand to the gateway.
func TestStudioAudioDecodes(t *testing.T) {
	s, err := NewStudio()
	if err != nil {
		t.Fatal(err)
	}
	u := Speak("The quick brown fox jumps over the lazy dog.", 1)
	for _, rate := range []int{8000, 22050, 24000, 44100} {
		pcm := s.PCM(u, rate)
		clip, err := sdktest.Decode("audio/pcm;rate="+strconv.Itoa(rate), pcm.Bytes())
		if err != nil || clip.Frames != frames(u.Seconds, rate) {
			t.Errorf("pcm %d: %+v %v, want %d frames", rate, clip, err, frames(u.Seconds, rate))
		}
		wav := s.WAV(u, rate)
		clip, err = sdktest.Decode("audio/wav", wav.Bytes())
		if err != nil || clip.SampleRate != rate || clip.Frames != frames(u.Seconds, rate) {
			t.Errorf("wav %d: %+v %v", rate, clip, err)
		}
	}
	clip, err := sdktest.Decode("audio/mpeg", s.MP3(u).Bytes())
	if err != nil {
		t.Fatalf("mp3: %v", err)
	}
	if clip.Seconds() < u.Seconds || clip.Seconds() > u.Seconds+0.1 {
		t.Errorf("mp3 lasts %.3f s for a %.3f s utterance", clip.Seconds(), u.Seconds)
	}
}

// TestSilenceBetweenWords: the tone sounds only inside characters.
func TestSilenceBetweenWords(t *testing.T) {
	s, _ := NewStudio()
	const rate = 8000
	u := Speak("a b", 1)
	pcm := s.PCM(u, rate).Bytes()
	sample := func(t float64) int16 {
		i := frames(t, rate)
		return int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)
	}
	gap := u.Chars[1] // the space
	for tm := gap.Start + 0.001; tm < gap.End-0.001; tm += 0.001 {
		if v := sample(tm); v != 0 {
			t.Fatalf("sample %d at %.3f s, inside the space", v, tm)
		}
	}
	loud := false
	for tm := u.Chars[0].Start; tm < u.Chars[0].End; tm += 0.001 {
		loud = loud || sample(tm) > 1000
	}
	if !loud {
		t.Error("no tone while 'a' is spoken")
	}
}

func TestControlFaults(t *testing.T) {
	c := NewControl(Options{MaxRecorded: 2})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, f, ok := c.Begin(r)
		if !ok {
			return
		}
		if f != nil {
			w.Header().Set("Retry-After", f.RetryAfter)
			w.WriteHeader(f.Status)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Post(srv.URL+path, "text/plain", strings.NewReader("body of "+path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	c.FailNext(2, Fault{Path: "/a", Status: 429, RetryAfter: "1"})
	c.FailAlways(Fault{Path: "/b", Status: 503})
	steps := []struct {
		path   string
		status int
	}{{"/c", 200}, {"/a", 429}, {"/b", 503}, {"/a", 429}, {"/a", 200}, {"/b", 503}}
	for i, s := range steps {
		if got, _ := get(s.path); got != s.status {
			t.Errorf("step %d %s: status %d, want %d", i, s.path, got, s.status)
		}
	}
	if c.Calls() != 6 || c.CallsTo("/a") != 3 || c.CallsTo("/b") != 2 {
		t.Errorf("calls %d, /a %d, /b %d", c.Calls(), c.CallsTo("/a"), c.CallsTo("/b"))
	}
	reqs := c.Requests()
	if len(reqs) != 2 || reqs[1].Path != "/b" || string(reqs[1].Body) != "body of /b" || reqs[0].Path != "/a" {
		t.Errorf("recorded %+v", reqs)
	}
	c.Reset()
	if got, _ := get("/b"); got != 200 || c.Calls() != 1 {
		t.Errorf("after Reset: status %d, %d calls", got, c.Calls())
	}
}

func TestControlLatencyEndsWithTheClient(t *testing.T) {
	c := NewControl(Options{Latency: time.Hour})
	done := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, ok := c.Begin(r)
		done <- ok
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 100 * time.Millisecond}
	if _, err := client.Get(srv.URL); err == nil {
		t.Fatal("the request did not time out")
	}
	if ok := <-done; ok {
		t.Error("Begin went on after the client left")
	}
}

// TestWriteAudioChunks: bodies go out in ChunkSize pieces, each flushed.
func TestWriteAudioChunks(t *testing.T) {
	c := NewControl(Options{ChunkSize: 100, ChunkDelay: time.Millisecond})
	a := Audio{}
	for range 7 {
		a.add(make([]byte, 37))
	}
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	c.WriteAudio(t.Context(), rec, a)
	if rec.Body.Len() != 7*37 {
		t.Errorf("%d bytes written", rec.Body.Len())
	}
	want := []int{100, 100, 59}
	if len(rec.writes) != len(want) {
		t.Fatalf("writes %v, want %v", rec.writes, want)
	}
	for i := range want {
		if rec.writes[i] != want[i] || rec.flushes[i] != i+1 {
			t.Errorf("writes %v flushes %v", rec.writes, rec.flushes)
		}
	}
}

// TestBreakStreamAfter: the next body breaks inside the chunk after the
// asked number (a client reads a transport failure, not a short body),
// once; the body after it is whole.
func TestBreakStreamAfter(t *testing.T) {
	c := NewControl(Options{ChunkSize: 100})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.WriteAudio(r.Context(), w, Audio{Parts: [][]byte{make([]byte, 450)}})
	}))
	defer srv.Close()
	get := func() (int, error) {
		t.Helper()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return len(b), err
	}
	c.BreakStreamAfter(2)
	if n, err := get(); err == nil || n < 200 || n > 202 {
		t.Errorf("broken body: %d bytes, error %v; want 200 and a bit, then an error", n, err)
	}
	if n, err := get(); err != nil || n != 450 {
		t.Errorf("the next body: %d bytes, error %v", n, err)
	}
}

type flushRecorder struct {
	*httptest.ResponseRecorder
	writes  []int
	flushes []int
	n       int
}

func (f *flushRecorder) Write(p []byte) (int, error) {
	f.writes = append(f.writes, len(p))
	return f.ResponseRecorder.Write(p)
}

func (f *flushRecorder) Flush() {
	f.n++
	f.flushes = append(f.flushes, f.n)
}

// stubVoice "speaks" one second of a ramp per call, its words at fixed
// times.
type stubVoice struct{}

func (stubVoice) Speak(text string, speed float64) ([]int16, int, []Span, error) {
	s := make([]int16, 8000)
	for i := range s {
		s[i] = int16(i)
	}
	return s, 8000, []Span{{Text: "one", Start: 0.1, End: 0.4}, {Text: "two", Start: 0.5, End: 0.9}}, nil
}

func TestVoiceReplacesTheTone(t *testing.T) {
	c := NewControl(Options{Voice: stubVoice{}})
	u, err := c.Speak("one two", 1)
	if err != nil {
		t.Fatal(err)
	}
	if u.Seconds != 1 || len(u.Words) != 2 || len(u.Chars) != 7 {
		t.Fatalf("utterance %+v", u)
	}
	if u.Chars[4].Start != 0.5 || u.Chars[3].Text != " " || u.Chars[3].End != 0.5 {
		t.Errorf("chars %+v", u.Chars)
	}
	st, _ := NewStudio()
	pcm := st.PCM(u, 16000).Bytes()
	if len(pcm) != 2*16000 {
		t.Fatalf("%d bytes at 16 kHz, want one second", len(pcm))
	}
	// Linear interpolation of the ramp: sample 2i is i, 2i+1 is i+0.5.
	if v := int16(binary.LittleEndian.Uint16(pcm[2*200:])); v != 100 {
		t.Errorf("sample 200 = %d, want 100", v)
	}
}

func TestEncoded(t *testing.T) {
	s, err := NewStudio()
	if err != nil {
		t.Fatal(err)
	}
	u := Speak("Hello there, how are you?", 1)
	tests := []struct {
		format        string
		rate, bitrate int
		wantRate      int
	}{
		{"pcm", 16000, 0, 16000},
		{"wav", 22050, 0, 22050},
		{"mp3", 44100, 0, 44100},
		{"mp3", 22050, 32, 22050},
		{"mp3", 44100, 128, 44100},
		{"opus", 48000, 32, 48000},
		{"flac", 24000, 0, 24000},
		{"ulaw", 8000, 0, 8000},
		{"alaw", 8000, 0, 8000},
		{"aac", 24000, 0, AACRate},
	}
	for _, tt := range tests {
		a, mt, err := s.Encoded(u, tt.format, tt.rate, tt.bitrate)
		if err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		clip, err := sdktest.Decode(mt, a.Bytes())
		if err != nil {
			t.Fatalf("%s %d %d (%s): %v", tt.format, tt.rate, tt.bitrate, mt, err)
		}
		if clip.Format != tt.format || clip.SampleRate != tt.wantRate {
			t.Errorf("%s %d %d: got %+v", tt.format, tt.rate, tt.bitrate, clip)
		}
		if d := clip.Seconds() - u.Seconds; d < -0.05 || d > 0.2 {
			t.Errorf("%s: %.3f s for an utterance of %.3f s", tt.format, clip.Seconds(), u.Seconds)
		}
	}
}
