// Command minimax is the voxgate provider plugin for MiniMax speech (T2A
// v2, POST /v1/t2a_v2): whole clips and streams in pcm, wav or mp3, the
// voice list, and voice cloning from an uploaded file. See README.md for
// settings and options.
package main

import "github.com/voxgate/voxgate/sdk"

func main() { sdk.Serve(New()) }
