package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/voxgate/voxgate/sdk"
)

// The realtime phase (docs/realtime.md): on the eSpeak path, what the
// realtime socket adds to the time to first audio of a sentence, against
// the eSpeak plugin's own time to first audio for the same sentence asked
// directly over its gRPC Stream; and the gateway's memory with 1,000 open
// idle sockets.
//
//	client ──gRPC Stream──────────────────────────► voxgate-espeak   (direct)
//	client ──WebSocket──► bin/voxgate ──gRPC──► voxgate-espeak       (gateway)

// rtSentence is what both paths speak.
const rtSentence = "Hello there, this is a realtime test sentence."

// targetRealtimeAdded is the bound on what the socket adds.
const targetRealtimeAdded = 5.0 // ms

type realtimeResult struct {
	Rounds int `json:"rounds"`
	// Direct and Socket are the times to first audio, Added the median of
	// the paired differences.
	Direct latency `json:"direct_ttfa"`
	Socket latency `json:"socket_ttfa"`
	Added  float64 `json:"added_p50_ms"`
	// IdleSockets were open at once; RSS before and with them, per socket.
	IdleSockets    int     `json:"idle_sockets"`
	RSSBefore      uint64  `json:"rss_before_bytes"`
	RSSWith        uint64  `json:"rss_with_bytes"`
	BytesPerSocket float64 `json:"bytes_per_socket"`
}

func realtimeConfig(listen, dir, bin string) string {
	return espeakConfig(listen, dir, bin, "instances: 1")
}

// realtimeBench runs the phase with its own gateway.
func realtimeBench(ctx context.Context, bin, dir string, rounds, sockets int, res *Results) error {
	gw, err := startGateway(ctx, bin, dir, "realtime", realtimeConfig)
	if err != nil {
		return err
	}
	defer gw.stop()
	key, err := gw.createKey(ctx, benchOrg)
	if err != nil {
		return err
	}
	if err := gw.serve(ctx); err != nil {
		return err
	}
	direct, closeDirect, err := startESpeak(bin)
	if err != nil {
		return err
	}
	defer closeDirect()
	url := "ws://" + gw.addr + "/v1/audio/speech/realtime"
	hdr := http.Header{"Authorization": {"Bearer " + key}}
	sock, _, err := websocket.DefaultDialer.DialContext(ctx, url, hdr)
	if err != nil {
		return fmt.Errorf("dial the realtime socket: %w", err)
	}
	defer sock.Close()

	r := &res.Realtime
	var ds, ss, added []time.Duration
	for i := range rounds + 5 {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Alternate which path goes first; the first rounds warm up.
		var d, s time.Duration
		if i%2 == 0 {
			if d, err = directTTFA(ctx, direct); err == nil {
				s, err = socketTTFA(sock, i)
			}
		} else if s, err = socketTTFA(sock, i); err == nil {
			d, err = directTTFA(ctx, direct)
		}
		if err != nil {
			return err
		}
		if i >= 5 {
			ds, ss, added = append(ds, d), append(ss, s), append(added, s-d)
		}
	}
	r.Rounds, r.Direct, r.Socket = rounds, summarize(ds), summarize(ss)
	r.Added = summarize(added).P50

	// Idle sockets: open, upgraded, no context.
	before, err := procMemory(gw.pid())
	if err != nil {
		return err
	}
	conns := make([]*websocket.Conn, 0, sockets)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range sockets {
		c, _, err := websocket.DefaultDialer.DialContext(ctx, url, hdr)
		if err != nil {
			return fmt.Errorf("idle socket %d: %w", len(conns), err)
		}
		conns = append(conns, c)
	}
	time.Sleep(time.Second) // let the gateway settle
	with, err := procMemory(gw.pid())
	if err != nil {
		return err
	}
	r.IdleSockets, r.RSSBefore, r.RSSWith = sockets, before.RSS, with.RSS
	r.BytesPerSocket = float64(int64(with.RSS)-int64(before.RSS)) / float64(sockets)
	return nil
}

// startESpeak starts the eSpeak plugin as the gateway would and returns
// its Provider.
func startESpeak(bin string) (sdk.Provider, func(), error) {
	cfg := sdk.ClientConfig(exec.Command(filepath.Join(bin, "plugins", "voxgate-espeak")))
	cfg.Logger = hclog.NewNullLogger()
	c := plugin.NewClient(cfg)
	p, err := sdk.DispenseProvider(c)
	if err != nil {
		c.Kill()
		return nil, nil, err
	}
	if err := p.Configure(context.Background(), map[string]string{}); err != nil {
		c.Kill()
		return nil, nil, err
	}
	return p, c.Kill, nil
}

var errFirst = errors.New("first chunk")

// directTTFA is the plugin's own time to its first audio for rtSentence.
func directTTFA(ctx context.Context, p sdk.Provider) (time.Duration, error) {
	start := time.Now()
	var d time.Duration
	err := p.Stream(ctx, &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: rtSentence}, func(c sdk.Chunk) error {
		if len(c.Data) == 0 {
			return nil
		}
		d = time.Since(start)
		return errFirst // stop: only the first audio is timed
	})
	if err != nil && !errors.Is(err, errFirst) {
		return 0, err
	}
	return d, nil
}

// socketTTFA opens context n, sends rtSentence with a flush, times the
// first audio frame, and lets the context finish.
func socketTTFA(sock *websocket.Conn, n int) (time.Duration, error) {
	id := fmt.Sprintf("c%d", n)
	if err := sock.WriteJSON(map[string]any{"type": "start", "contextId": id, "model": "espeak/espeak-ng", "voice": "en"}); err != nil {
		return 0, err
	}
	if err := expectMessage(sock, "started"); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := sock.WriteJSON(map[string]any{"type": "text", "contextId": id, "text": rtSentence}); err != nil {
		return 0, err
	}
	if err := sock.WriteJSON(map[string]any{"type": "close", "contextId": id}); err != nil {
		return 0, err
	}
	var d time.Duration
	for {
		kind, data, err := sock.ReadMessage()
		if err != nil {
			return 0, err
		}
		if kind == websocket.BinaryMessage {
			if d == 0 {
				d = time.Since(start)
			}
			continue
		}
		var m struct{ Type, Reason string }
		_ = json.Unmarshal(data, &m)
		switch m.Type {
		case "done":
			if m.Reason != "completed" || d == 0 {
				return 0, fmt.Errorf("realtime context ended %q: %s", m.Reason, data)
			}
			return d, nil
		case "error":
			return 0, fmt.Errorf("realtime error: %s", data)
		}
	}
}

func expectMessage(sock *websocket.Conn, typ string) error {
	_, data, err := sock.ReadMessage()
	if err != nil {
		return err
	}
	var m struct{ Type string }
	if json.Unmarshal(data, &m) != nil || m.Type != typ {
		return fmt.Errorf("want %s, got %s", typ, data)
	}
	return nil
}
