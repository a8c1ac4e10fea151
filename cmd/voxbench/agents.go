package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
)

// The agents phase (issue 31, docs/realtime.md "Pooled provider
// sockets"): voice-agent traffic on the realtime socket through the fakes
// of ElevenLabs (multi-stream-input, 5 contexts a socket) and Cartesia
// (its TTS WebSocket, 16 contexts a socket in the pool).
//
//   - Pooling: 1,000 contexts open at once over 200 client sockets, half
//     on each provider: the upstream sockets each key opened, against
//     ⌈contexts of the key ÷ cap⌉, and the time to first audio under
//     that load.
//   - Added time to first audio: one context at a time, a sentence through
//     the gateway against the same sentence on a context of a direct,
//     already open multi-stream-input socket of the fake, interleaved.
//   - Aggregation: a reply sent word by word as an LLM streams it (a word
//     every 15 ms) under sentence, clause and immediate: time to first
//     audio from the first word, and segments per turn.
//
// The fakes run in this process: the direct path then pays no process
// hand-over, so the added time is an upper bound of the gateway's share.

// targetAgentsAdded is the bound on the added time to first audio.
const targetAgentsAdded = 5.0 // ms

// agentsSentence is what a context says.
const agentsSentence = "Sure, I can help you with that order today."

// agentsReply is a turn of the aggregation measure.
const agentsReply = "Sure, I can help with that; let me look up your order, which shipped on Monday. It should arrive by Friday, and I will send you the tracking link."

type agentsProvider struct {
	Provider string `json:"provider"`
	Contexts int    `json:"contexts"`
	Cap      int    `json:"cap_per_socket"`
	Sockets  int64  `json:"upstream_sockets"` // open while every context was
	// Bound is ⌈Contexts ÷ Cap⌉.
	Bound int     `json:"bound"`
	TTFA  latency `json:"ttfa_under_load"`
}

type agentsAggregation struct {
	Mode     string  `json:"mode"`
	Turns    int     `json:"turns"`
	TTFA     latency `json:"ttfa"`
	Segments float64 `json:"segments_per_turn"`
}

type agentsResult struct {
	Contexts      int                 `json:"contexts"`
	ClientSockets int                 `json:"client_sockets"`
	Providers     []agentsProvider    `json:"providers"`
	Rounds        int                 `json:"rounds"`
	Direct        latency             `json:"direct_ttfa"`
	Gateway       latency             `json:"gateway_ttfa"`
	AddedP50      float64             `json:"added_p50_ms"`
	AddedP99      float64             `json:"added_p99_ms"`
	Aggregation   []agentsAggregation `json:"aggregation"`
}

func agentsConfig(el, ca string) func(listen, dir, bin string) string {
	return func(listen, dir, bin string) string {
		return fmt.Sprintf(`server:
  listen: %s
storage:
  path: %s
plugins:
  dir: %s
secrets:
  key_file: %s
providers:
  elevenlabs: {plugin: voxgate-elevenlabs, managed: true, api_key: %s, base_url: %s}
  cartesia: {plugin: voxgate-cartesia, managed: true, api_key: %s, base_url: %s}
orgs:
  %s:
    providers:
      elevenlabs: {enabled: true}
      cartesia: {enabled: true}
`, listen, filepath.Join(dir, "voxgate.db"), filepath.Join(bin, "plugins"), filepath.Join(dir, "secrets.key"),
			elevenlabs.Key, el, cartesia.Key, ca, benchOrg)
	}
}

// agentsBench runs the phase with its own gateway and fakes.
func agentsBench(ctx context.Context, bin, dir string, sockets, perSocket, rounds, turns int, res *Results) error {
	el := elevenlabs.New(nil, fakeupstream.Options{ChunkSize: 4800})
	defer el.Close()
	ca := cartesia.New(nil, fakeupstream.Options{ChunkSize: 4800})
	defer ca.Close()
	gw, err := startGateway(ctx, bin, dir, "agents", agentsConfig(el.BaseURL(), ca.BaseURL()))
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
	rtURL := "ws://" + gw.addr + "/v1/audio/speech/realtime"
	hdr := http.Header{"Authorization": {"Bearer " + key}}
	r := &res.Agents

	// Pooling first, on fresh fakes and a fresh pool: every context open
	// at once.
	_, elBefore := el.MultiSockets()
	caBefore := ca.Sockets()
	r.Contexts, r.ClientSockets = sockets*perSocket, sockets
	var mu sync.Mutex
	ttfa := map[string][]time.Duration{}
	var allFirst sync.WaitGroup
	allFirst.Add(sockets)
	release := make(chan struct{})
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var firstErr error
	for s := range sockets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := loadSocket(lctx, rtURL, hdr, s, perSocket, &allFirst, release)
			mu.Lock()
			defer mu.Unlock()
			for p, d := range got {
				ttfa[p] = append(ttfa[p], d...)
			}
			if err != nil && firstErr == nil {
				firstErr = err
				cancel() // the others stop too
			}
		}()
	}
	// At the release every context is open: the upstream sockets open
	// then are those the pool needs for all of them.
	var elOpen, caOpen int64
	go func() {
		allFirst.Wait()
		elOpen, _ = el.MultiSockets()
		caOpen = ca.OpenSockets()
		close(release)
	}()
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	_, elAfter := el.MultiSockets()
	logf("agents: upstream sockets opened during the run: ElevenLabs %d, Cartesia %d (open at the release: %d, %d)", elAfter-elBefore, ca.Sockets()-caBefore, elOpen, caOpen)
	for _, p := range []struct {
		name    string
		cap     int
		sockets int64
	}{{"elevenlabs", elevenlabs.MaxContextsPerSocket, elOpen}, {"cartesia", 16, caOpen}} {
		n := len(ttfa[p.name])
		r.Providers = append(r.Providers, agentsProvider{Provider: p.name, Contexts: n, Cap: p.cap, Sockets: p.sockets,
			Bound: (n + p.cap - 1) / p.cap, TTFA: summarize(ttfa[p.name])})
	}
	// Added time to first audio, one context at a time.
	direct, err := dialElevenDirect(ctx, el)
	if err != nil {
		return err
	}
	defer direct.Close()
	sock, _, err := websocket.DefaultDialer.DialContext(ctx, rtURL, hdr)
	if err != nil {
		return fmt.Errorf("dial the realtime socket: %w", err)
	}
	defer sock.Close()
	var ds, gs, added []time.Duration
	for i := range rounds + 5 {
		var d, g time.Duration
		if i%2 == 0 {
			if d, err = directElevenTTFA(direct, i); err == nil {
				g, err = agentTTFA(sock, i)
			}
		} else if g, err = agentTTFA(sock, i); err == nil {
			d, err = directElevenTTFA(direct, i)
		}
		if err != nil {
			return err
		}
		if i >= 5 {
			ds, gs, added = append(ds, d), append(gs, g), append(added, g-d)
		}
	}
	r.Rounds, r.Direct, r.Gateway = rounds, summarize(ds), summarize(gs)
	a := summarize(added)
	r.AddedP50, r.AddedP99 = a.P50, a.P99

	// Aggregation modes.
	for _, mode := range []string{"sentence", "clause", "immediate"} {
		var ttfa []time.Duration
		segs := 0
		for i := range turns {
			t, n, err := aggregationTurn(sock, mode, i)
			if err != nil {
				return fmt.Errorf("%s: %w", mode, err)
			}
			ttfa, segs = append(ttfa, t), segs+n
		}
		r.Aggregation = append(r.Aggregation, agentsAggregation{Mode: mode, Turns: turns, TTFA: summarize(ttfa), Segments: float64(segs) / float64(turns)})
	}

	return nil
}

// dialElevenDirect opens the baseline's multi-stream-input socket on the
// fake, as the plugin opens its pooled ones.
func dialElevenDirect(ctx context.Context, el *elevenlabs.Server) (*websocket.Conn, error) {
	u, _ := url.Parse(el.BaseURL())
	u.Scheme = "ws"
	u.Path += elevenlabs.MultiStreamInputPath(elevenlabs.VoiceRachel)
	u.RawQuery = url.Values{"model_id": {"eleven_flash_v2_5"}, "output_format": {"pcm_24000"}, "auto_mode": {"true"}}.Encode()
	c, _, err := websocket.DefaultDialer.DialContext(ctx, u.String(), http.Header{"xi-api-key": {elevenlabs.Key}})
	if err != nil {
		return nil, fmt.Errorf("dial the fake's multi-stream-input: %w", err)
	}
	return c, nil
}

// directElevenTTFA speaks agentsSentence on a new context of the direct
// socket: the time from the text to its first audio.
func directElevenTTFA(c *websocket.Conn, n int) (time.Duration, error) {
	id := fmt.Sprintf("d%d", n)
	if err := c.WriteJSON(map[string]any{"text": " ", "context_id": id}); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := c.WriteJSON(map[string]any{"text": agentsSentence + " ", "context_id": id}); err != nil {
		return 0, err
	}
	if err := c.WriteJSON(map[string]any{"context_id": id, "close_context": true}); err != nil {
		return 0, err
	}
	var d time.Duration
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return 0, err
		}
		var m struct {
			Audio     string `json:"audio"`
			IsFinal   bool   `json:"isFinal"`
			ContextID string `json:"contextId"`
		}
		if json.Unmarshal(data, &m) != nil || m.ContextID != id {
			continue
		}
		if m.Audio != "" && d == 0 {
			d = time.Since(start)
		}
		if m.IsFinal {
			if d == 0 {
				return 0, fmt.Errorf("direct context %s ended without audio", id)
			}
			return d, nil
		}
	}
}

// agentTTFA speaks agentsSentence on a gateway context bridged to
// ElevenLabs: the time from the text to its first audio frame.
func agentTTFA(sock *websocket.Conn, n int) (time.Duration, error) {
	id := fmt.Sprintf("g%d", n)
	if err := sock.WriteJSON(map[string]any{"type": "start", "contextId": id, "model": "elevenlabs/eleven_flash_v2_5",
		"voice": elevenlabs.VoiceRachel, "output": map[string]any{"format": "pcm"}}); err != nil {
		return 0, err
	}
	if err := expectMessage(sock, "started"); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := sock.WriteJSON(map[string]any{"type": "text", "contextId": id, "text": agentsSentence + " "}); err != nil {
		return 0, err
	}
	if err := sock.WriteJSON(map[string]any{"type": "close", "contextId": id}); err != nil {
		return 0, err
	}
	var d time.Duration
	_, err := readUntilDone(sock, id, func() {
		if d == 0 {
			d = time.Since(start)
		}
	})
	if err == nil && d == 0 {
		err = fmt.Errorf("context %s ended without audio", id)
	}
	return d, err
}

// readUntilDone reads context id's messages until its done, calling
// audio at each audio frame; it returns the context's metrics message.
func readUntilDone(sock *websocket.Conn, id string, audio func()) (map[string]any, error) {
	var metrics map[string]any
	for {
		kind, data, err := sock.ReadMessage()
		if err != nil {
			return nil, err
		}
		if kind == websocket.BinaryMessage {
			if len(data) > 0 && int(data[0]) < len(data) && string(data[1:1+int(data[0])]) == id {
				audio()
			}
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		if m["contextId"] != id {
			continue
		}
		switch m["type"] {
		case "metrics":
			metrics = m
		case "error":
			return nil, fmt.Errorf("realtime error: %s", data)
		case "done":
			if m["reason"] != "completed" {
				return nil, fmt.Errorf("context %s ended %v: %s", id, m["reason"], data)
			}
			return metrics, nil
		}
	}
}

// aggregationTurn sends agentsReply word by word, a word every 15 ms, on
// a context of the given aggregation, and returns its time to first audio
// and segments (the metrics message's).
func aggregationTurn(sock *websocket.Conn, mode string, n int) (time.Duration, int, error) {
	id := fmt.Sprintf("%s%d", mode, n)
	if err := sock.WriteJSON(map[string]any{"type": "start", "contextId": id, "model": "elevenlabs/eleven_flash_v2_5",
		"voice": elevenlabs.VoiceRachel, "output": map[string]any{"format": "pcm"}, "aggregation": mode}); err != nil {
		return 0, 0, err
	}
	if err := expectMessage(sock, "started"); err != nil {
		return 0, 0, err
	}
	// The words go out from their own goroutine while this one reads:
	// the audio of the first segment comes while the reply is streaming.
	words := strings.SplitAfter(agentsReply, " ")
	werr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(15 * time.Millisecond)
		defer tick.Stop()
		for _, w := range words {
			if err := sock.WriteJSON(map[string]any{"type": "text", "contextId": id, "text": w}); err != nil {
				werr <- err
				return
			}
			<-tick.C
		}
		werr <- sock.WriteJSON(map[string]any{"type": "close", "contextId": id})
	}()
	m, err := readUntilDone(sock, id, func() {})
	if e := <-werr; err == nil {
		err = e
	}
	if err != nil {
		return 0, 0, err
	}
	ttfa, _ := m["timeToFirstAudioMs"].(float64)
	segs, _ := m["segments"].(float64)
	return time.Duration(ttfa * float64(time.Millisecond)), int(segs), nil
}

// loadSocket opens client socket s with perSocket contexts, alternating
// ElevenLabs and Cartesia, speaks agentsSentence on each, says when all
// have had audio (first), waits for release (every context of every
// socket open at once), then closes them. It returns the times to first
// audio by provider.
func loadSocket(ctx context.Context, rtURL string, hdr http.Header, s, perSocket int, first *sync.WaitGroup, release <-chan struct{}) (map[string][]time.Duration, error) {
	firstDone := false
	defer func() {
		if !firstDone {
			first.Done()
		}
	}()
	sock, _, err := websocket.DefaultDialer.DialContext(ctx, rtURL, hdr)
	if err != nil {
		return nil, fmt.Errorf("client socket %d: %w", s, err)
	}
	defer sock.Close()
	stop := context.AfterFunc(ctx, func() { sock.Close() })
	defer stop()
	provider := map[string]string{}
	for c := range perSocket {
		id := fmt.Sprintf("c%d", c)
		msg := map[string]any{"type": "start", "contextId": id, "output": map[string]any{"format": "pcm"}}
		if (s*perSocket+c)%2 == 0 {
			msg["model"], msg["voice"], provider[id] = "elevenlabs/eleven_flash_v2_5", elevenlabs.VoiceRachel, "elevenlabs"
		} else {
			msg["model"], msg["voice"], provider[id] = "cartesia/sonic-2", cartesia.VoiceKatie, "cartesia"
		}
		if err := sock.WriteJSON(msg); err != nil {
			return nil, err
		}
		if err := expectMessage(sock, "started"); err != nil {
			return nil, err
		}
	}
	sent := map[string]time.Time{}
	for c := range perSocket {
		id := fmt.Sprintf("c%d", c)
		sent[id] = time.Now()
		if err := sock.WriteJSON(map[string]any{"type": "text", "contextId": id, "text": agentsSentence + " "}); err != nil {
			return nil, err
		}
	}
	out := map[string][]time.Duration{}
	seen := map[string]bool{} // the reader's
	firsts := 0
	closed := false
	done := 0
	msgs := make(chan []byte, 64)
	rerr := make(chan error, 1)
	go func() {
		for {
			kind, data, err := sock.ReadMessage()
			if err != nil {
				rerr <- err
				return
			}
			if kind == websocket.BinaryMessage {
				if len(data) > 0 && int(data[0]) < len(data) {
					id := string(data[1 : 1+int(data[0])])
					if !seen[id] {
						seen[id] = true
						msgs <- []byte(id)
					}
				}
				continue
			}
			msgs <- append([]byte{0}, data...)
		}
	}()
	for done < perSocket {
		select {
		case m := <-msgs:
			if m[0] != 0 {
				id := string(m)
				out[provider[id]] = append(out[provider[id]], time.Since(sent[id]))
				if firsts++; firsts == perSocket && !firstDone {
					firstDone = true
					first.Done()
				}
				continue
			}
			var j map[string]any
			_ = json.Unmarshal(m[1:], &j)
			switch j["type"] {
			case "error":
				return nil, fmt.Errorf("client socket %d: %s", s, m[1:])
			case "done":
				done++
			}
		case <-release:
			release = nil
			if !closed {
				closed = true
				for c := range perSocket {
					if err := sock.WriteJSON(map[string]any{"type": "close", "contextId": fmt.Sprintf("c%d", c)}); err != nil {
						return nil, err
					}
				}
			}
		case err := <-rerr:
			return nil, fmt.Errorf("client socket %d: %w", s, err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
