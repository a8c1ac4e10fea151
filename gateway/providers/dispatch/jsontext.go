package dispatch

import "github.com/voxgate/voxgate/gateway/internal/jsonstr"

// appendJSONText appends s escaped as the inside of a JSON string: the
// text slot of a plan's body. <, > and & are left alone; the body goes
// to a provider's API, never into HTML.
func appendJSONText(dst []byte, s string) []byte { return jsonstr.Append(dst, s, false) }
