package dispatch

import (
	"bufio"
	"io"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/sdk"
)

// BenchmarkFill measures writing a planned request for a text, as send
// does before every provider call: the plan's headers, URL and body.
func BenchmarkFill(b *testing.B) {
	p, err := compile("openai", &sdk.Plan{
		Method: "POST", URL: "https://api.openai.com/v1/audio/speech", MediaType: "audio/pcm",
		Header: map[string]string{"authorization": "Bearer sk-test", "content-type": "application/json", "openai-organization": "org-1"},
		Body:   []byte(`{"model":"tts-1","voice":"alloy","input":"` + sdk.PlanText + `","response_format":"pcm"}`),
	})
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(io.Discard)
	for b.Loop() {
		req := fasthttp.AcquireRequest()
		p.fill(req, "Hello there, how are you today?")
		if err := req.Write(w); err != nil {
			b.Fatal(err)
		}
		fasthttp.ReleaseRequest(req)
	}
}
