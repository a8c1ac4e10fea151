package cursor

import (
	"bytes"
	"encoding/base64"
	"testing"
)

func TestRoundTripAndRejections(t *testing.T) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	pos := []byte{0, 1, 2, 3, 4, 5, 6, 7, 'x'}
	good := c.Encode("org-a", "voices", pos)
	got, err := c.Decode("org-a", "voices", good)
	if err != nil || !bytes.Equal(got, pos) {
		t.Fatalf("round trip: %v %x", err, got)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	flipped := append([]byte(nil), raw...)
	flipped[3] ^= 1
	other := New([]byte("another-secret-another-secret-xx"))
	tests := []struct {
		name, org, scope, cursor string
	}{
		{"other org", "org-b", "voices", good},
		{"other query", "org-a", "logs?provider=espeak", good},
		{"tampered position", "org-a", "voices", base64.RawURLEncoding.EncodeToString(flipped)},
		{"truncated", "org-a", "voices", good[:len(good)-3]},
		{"not base64", "org-a", "voices", "!!!!"},
		{"empty", "org-a", "voices", ""},
		{"other secret", "org-a", "voices", other.Encode("org-a", "voices", pos)},
		{"huge", "org-a", "voices", string(bytes.Repeat([]byte("A"), 5000))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Decode(tt.org, tt.scope, tt.cursor); err != ErrInvalid {
				t.Fatalf("Decode = %v, want ErrInvalid", err)
			}
		})
	}
}
