package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/voxgate/voxgate/sdk"
)

// NewJSONRequest returns a request carrying body encoded as JSON, with
// Content-Type set and GetBody set so that Do can send it again.
func NewJSONRequest(ctx context.Context, method, url string, body any) (*http.Request, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// ForwardOptions tune Forward.
type ForwardOptions struct {
	// MediaType is set on the first chunk sent.
	MediaType string
	// Align, when above 1, keeps every chunk a whole number of Align-byte
	// frames (2 for 16-bit mono PCM): a byte left over from one read is
	// carried into the next chunk, so a receiver that converts chunk by
	// chunk never sees half a sample.
	Align int
	// BufferSize is the largest chunk; default 32 KiB.
	BufferSize int
	// Provider names the provider in read error messages.
	Provider string
}

// Forward reads r (an upstream response body) and hands what arrives to
// send as it arrives: each read becomes one chunk, without waiting to fill
// a buffer, so audio reaches the listener with the latency the provider
// gives it. The read buffer is reused; every chunk is a fresh copy, as
// sdk.Chunk requires.
//
// Forward returns nil at the end of r, send's error as is (the listener
// went away: the stream must end), or an *sdk.Error for a failed read
// (see TransportError). It returns the number of bytes sent.
func Forward(ctx context.Context, r io.Reader, send func(sdk.Chunk) error, o ForwardOptions) (int64, error) {
	size := o.BufferSize
	if size <= 0 {
		size = 32 << 10
	}
	align := max(o.Align, 1)
	buf := make([]byte, size+align)
	var (
		held  int // bytes carried over from the last read (< align)
		total int64
		first = true
	)
	for {
		n, rerr := r.Read(buf[held : held+size])
		n += held
		whole := n - n%align
		if whole > 0 {
			c := sdk.Chunk{Data: bytes.Clone(buf[:whole])}
			if first {
				c.MediaType, first = o.MediaType, false
			}
			if err := send(c); err != nil {
				return total, err
			}
			total += int64(whole)
		}
		held = copy(buf, buf[whole:n])
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				if held > 0 {
					return total, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("%s: stream ended inside a %d-byte frame", o.Provider, align)}
				}
				if first && o.MediaType != "" {
					// An empty stream still tells the receiver what it
					// would have been.
					if err := send(sdk.Chunk{MediaType: o.MediaType}); err != nil {
						return total, err
					}
				}
				return total, nil
			}
			return total, TransportError(ctx, o.Provider, rerr)
		}
	}
}
