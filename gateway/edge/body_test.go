package edge

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/quota"
	"github.com/voxgate/voxgate/gateway/problem"
)

func TestReadAllBounded(t *testing.T) {
	const limit = 3*bodyBlock + 100
	boom := errors.New("boom")
	pattern := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		n       int
		wrap    func(io.Reader) io.Reader
		memory  int64 // server.max_body_memory; 0: none
		perOrg  int64 // limits.body_memory_per_org; 0: none
		wantErr error
	}{
		{name: "empty", n: 0},
		{name: "one byte", n: 1},
		{name: "a block less one", n: bodyBlock - 1},
		{name: "a block", n: bodyBlock},
		{name: "a block and one", n: bodyBlock + 1},
		{name: "at the limit", n: limit},
		{name: "one past the limit", n: limit + 1, wantErr: fasthttp.ErrBodyTooLarge},
		{name: "far past the limit", n: 10 * limit, wantErr: fasthttp.ErrBodyTooLarge},
		{name: "a byte at a time", n: bodyBlock + 3, wrap: iotest.OneByteReader},
		{name: "EOF with the last data", n: 2*bodyBlock + 5, wrap: iotest.DataErrReader},
		{name: "half then an error", n: bodyBlock, wrap: func(r io.Reader) io.Reader {
			return io.MultiReader(io.LimitReader(r, bodyBlock/2), iotest.ErrReader(boom))
		}, wantErr: boom},
		{name: "within the memory for bodies", n: 2 * bodyBlock, memory: 2 * bodyBlock},
		{name: "past the memory for bodies", n: 2*bodyBlock + 1, memory: 2 * bodyBlock, wantErr: errBodyMemory},
		{name: "within the organization's share", n: 2 * bodyBlock, memory: 4 * bodyBlock, perOrg: 2 * bodyBlock},
		{name: "past the organization's share", n: 2*bodyBlock + 1, memory: 4 * bodyBlock, perOrg: 2 * bodyBlock, wantErr: errOrgBodyMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var blocks bodyBlocks
			mem := &bodyMemory{Quota: quota.Quota{Total: tc.memory, PerOrg: tc.perOrg}}
			want := pattern(tc.n)
			var r io.Reader = bytes.NewReader(want)
			if tc.wrap != nil {
				r = tc.wrap(r)
			}
			got, err := blocks.readAll(r, limit, mem, "acme")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || got != nil {
					t.Fatalf("got %d bytes, %v; want %v", len(got), err, tc.wantErr)
				}
				if held := mem.Held(); held != 0 || mem.HeldBy("acme") != 0 {
					t.Fatalf("%d bytes still counted after a failure", held)
				}
				return
			}
			if held := mem.Held(); held != int64(len(want)) || mem.HeldBy("acme") != held {
				t.Fatalf("%d bytes counted, want the body's %d", held, len(want))
			}
			if err != nil || !bytes.Equal(got, want) || cap(got) != len(want) {
				t.Fatalf("got %d bytes (cap %d, equal %v), %v; want %d exactly", len(got), cap(got), bytes.Equal(got, want), err, len(want))
			}
		})
	}
}

// withNotes is n small text parts, then last.
func withNotes(n int, last [3]string) [][3]string {
	parts := make([][3]string, 0, n+1)
	for range n {
		parts = append(parts, [3]string{"note", "", "x"})
	}
	return append(parts, last)
}

func TestUploadPart(t *testing.T) {
	const limit = 1000
	form := func(parts ...[3]string) ([]byte, string) { // name, filename, content
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for _, p := range parts {
			var pw io.Writer
			if p[1] != "" {
				pw, _ = w.CreateFormFile(p[0], p[1])
			} else {
				pw, _ = w.CreateFormField(p[0])
			}
			io.WriteString(pw, p[2])
		}
		w.Close()
		return b.Bytes(), w.Boundary()
	}
	audio := strings.Repeat("a", 600)
	for _, tc := range []struct {
		name     string
		parts    [][3]string
		boundary string // overrides the writer's
		want     string // the file's content, or the problem's code
		filename string
	}{
		{name: "one file", parts: [][3]string{{"file", "dir/take.wav", audio}}, want: audio, filename: "take.wav"},
		{name: "other fields around it", parts: [][3]string{{"name", "", "x"}, {"file", "a.mp3", audio}, {"note", "", "y"}}, want: audio, filename: "a.mp3"},
		{name: "at the limit", parts: [][3]string{{"file", "a.wav", strings.Repeat("b", limit)}}, want: strings.Repeat("b", limit), filename: "a.wav"},
		{name: "past the limit", parts: [][3]string{{"file", "a.wav", strings.Repeat("b", limit+1)}}, want: string(problem.PayloadTooLarge)},
		{name: "two files", parts: [][3]string{{"file", "a.wav", audio}, {"file", "b.wav", audio}}, want: string(problem.ValidationFailed)},
		{name: "no file", parts: [][3]string{{"name", "", "x"}}, want: string(problem.ValidationFailed)},
		{name: "too many parts", parts: withNotes(maxUploadParts, [3]string{"file", "a.wav", audio}), want: string(problem.ValidationFailed)},
		{name: "as many parts as allowed", parts: withNotes(maxUploadParts-1, [3]string{"file", "a.wav", audio}), want: audio, filename: "a.wav"},
		{name: "wrong boundary", parts: [][3]string{{"file", "a.wav", audio}}, boundary: "nope", want: string(problem.ValidationFailed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, boundary := form(tc.parts...)
			if tc.boundary != "" {
				boundary = tc.boundary
			}
			data, filename, declared, err := uploadPart(body, boundary, limit)
			if err != nil {
				var pe *problem.Error
				if !errors.As(err, &pe) || string(pe.Code) != tc.want {
					t.Fatalf("error %v, want %s", err, tc.want)
				}
				return
			}
			if string(data) != tc.want || filename != tc.filename || declared != "application/octet-stream" {
				t.Fatalf("got %d bytes, %q, %q; want %d bytes, %q", len(data), filename, declared, len(tc.want), tc.filename)
			}
		})
	}
}

// TestBodyMemoryShares: a refusal by each bound is told apart (503 or
// 429 at the edge) and counted by it, and nothing refused stays counted.
func TestBodyMemoryShares(t *testing.T) {
	m := &bodyMemory{Quota: quota.Quota{Total: 100, PerOrg: 60}}
	for i, st := range []struct {
		org  string
		n    int
		want error
	}{
		{"acme", 50, nil},
		{"acme", 20, errOrgBodyMemory}, // 70 > 60
		{"globex", 40, nil},            // 90
		{"initech", 20, errBodyMemory}, // 110 > 100
	} {
		if err := m.take(st.org, st.n); !errors.Is(err, st.want) {
			t.Fatalf("step %d: take(%s, %d) = %v, want %v", i, st.org, st.n, err, st.want)
		}
	}
	if m.Held() != 90 || m.refused.Load() != 1 || m.refusedOrg.Load() != 1 {
		t.Fatalf("held %d, refused %d and %d", m.Held(), m.refused.Load(), m.refusedOrg.Load())
	}
	if p := memoryProblem(errOrgBodyMemory); p.Status() != 429 || p.RetryAfter == 0 {
		t.Errorf("past the share: %d", p.Status())
	}
	if p := memoryProblem(errBodyMemory); p.Status() != 503 || p.RetryAfter == 0 {
		t.Errorf("past the total: %d", p.Status())
	}
	m.give("acme", 50)
	m.give("globex", 40)
	if m.Held() != 0 {
		t.Fatalf("after giving everything back: held %d", m.Held())
	}
}
