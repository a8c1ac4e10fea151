package main

import "time"

// plan holds every count and duration of a run, so that a quick run differs
// from a full one in one place.
type plan struct {
	// ClipSeconds is the length of the whole clip the clip fake returns
	// (24 kHz 16-bit PCM, so 48,000 bytes a second).
	ClipSeconds float64 `json:"clip_seconds"`
	// ClipChunk is the size of the clip fake's writes.
	ClipChunk int `json:"clip_chunk_bytes"`
	// StreamChunk and StreamDelay shape the streaming fake: chunks of
	// StreamChunk bytes (100 ms of audio) with StreamDelay between them.
	StreamChunk int           `json:"stream_chunk_bytes"`
	StreamDelay time.Duration `json:"stream_chunk_delay_ns"`
	// ManyStreamsDelay is the chunk delay while the concurrent-streams
	// phase runs: real-time pace (100 ms of audio every 100 ms).
	ManyStreamsDelay time.Duration `json:"many_streams_chunk_delay_ns"`
	// SmallClipSeconds is the length of the small clip (2/3 s of 24 kHz
	// PCM: 32,000 bytes), the clients phase's "32 KB request".
	SmallClipSeconds float64 `json:"small_clip_seconds"`

	WarmUp      int `json:"warm_up_requests"`
	SeqRounds   int `json:"sequential_rounds"`
	SeqPerRound int `json:"sequential_pairs_per_round"`

	Concurrency []int         `json:"throughput_clients"`
	Slot        time.Duration `json:"throughput_slot_ns"`
	Slots       int           `json:"throughput_slots_per_path"`

	TTFBPairs int `json:"ttfb_pairs"`
	// TTFBLoadClients clients per leg stream at once, TTFBLoadStreams
	// each, over TTFBLoadRounds rounds: the first byte under load
	// (loadedTTFB); 0 clients skips it.
	TTFBLoadClients int `json:"ttfb_load_clients"`
	TTFBLoadStreams int `json:"ttfb_load_streams_per_client"`
	TTFBLoadRounds  int `json:"ttfb_load_rounds"`
	// StagesTrace is how long the stages pass traces the gateway
	// (stages.go): at about ten sequential streams a second.
	StagesTrace time.Duration `json:"stages_trace_ns"`
	ManyStreams int           `json:"concurrent_streams"`

	// The clients phase: per workload, ClientRounds rounds of
	// ClientPerRound sequential triples (direct, nginx, gateway), then
	// ClientSlots closed-loop slots of ClientSlot per relay at
	// ClientConcurrency clients, for CPU per request.
	ClientRounds      int           `json:"clients_rounds"`
	ClientPerRound    int           `json:"clients_triples_per_round"`
	ClientConcurrency int           `json:"clients_concurrency"`
	ClientSlot        time.Duration `json:"clients_slot_ns"`
	ClientSlots       int           `json:"clients_slots_per_relay"`

	LogPages int `json:"log_page_samples"`
	// PGFixtureDiv divides the PostgreSQL fixture's row counts (1 in a
	// real run; tests load a small one).
	PGFixtureDiv int `json:"pg_fixture_divisor"`
	// WriterRun is how long each request-log writer run into PostgreSQL
	// offers rows.
	WriterRun time.Duration `json:"pg_writer_run_ns"`

	// Texts: ClipText for whole clips (the clip fake ignores its length),
	// TTFBText a short stream (5 chunks), ManyText a stream of about 4 s.
	ClipText string `json:"clip_text"`
	TTFBText string `json:"ttfb_text"`
	ManyText string `json:"many_streams_text"`
	// WholeClipChars is the text length of the whole-clip memory phase
	// (eSpeak at speed 0.25, WAV at 48 kHz: 4,900 characters make a
	// 114 MB answer).
	WholeClipChars int `json:"whole_clip_chars"`
}

func defaultPlan(o options) plan {
	p := plan{
		ClipSeconds:       o.clip,
		ClipChunk:         16 << 10,
		StreamChunk:       4800,
		StreamDelay:       20 * time.Millisecond,
		ManyStreamsDelay:  100 * time.Millisecond,
		SmallClipSeconds:  32000.0 / 48000,
		WarmUp:            300,
		SeqRounds:         10,
		SeqPerRound:       400,
		Concurrency:       []int{16, 64, 256},
		Slot:              2500 * time.Millisecond,
		Slots:             2,
		TTFBPairs:         120,
		TTFBLoadClients:   8,
		TTFBLoadStreams:   4,
		TTFBLoadRounds:    8,
		StagesTrace:       6 * time.Second,
		ManyStreams:       o.streams,
		ClientRounds:      5,
		ClientPerRound:    100,
		ClientConcurrency: 64,
		ClientSlot:        1500 * time.Millisecond,
		ClientSlots:       2,
		LogPages:          50,
		WriterRun:         10 * time.Second,
		PGFixtureDiv:      1,
		ClipText:          "The quick brown fox jumps over the lazy dog, twice.",
		TTFBText:          "Hello.",
		ManyText:          "Streaming speech arrives while the provider is still speaking it.",
		WholeClipChars:    4900,
	}
	if o.quick {
		p.WarmUp, p.SeqRounds, p.SeqPerRound = 50, 3, 100
		p.Slot, p.Slots = time.Second, 1
		p.TTFBPairs = 20
		p.TTFBLoadStreams, p.TTFBLoadRounds = 2, 2
		p.StagesTrace = 2 * time.Second
		p.ClientRounds, p.ClientPerRound = 2, 20
		p.ClientConcurrency, p.ClientSlot, p.ClientSlots = 16, 300*time.Millisecond, 1
		p.ManyStreams = min(o.streams, 200)
		p.LogPages = 10
		p.WriterRun = 2 * time.Second
		p.WholeClipChars = 1500
	}
	if o.ttfbPairs > 0 {
		p.TTFBPairs = o.ttfbPairs
	}
	if o.clientSlot > 0 {
		p.ClientSlot = o.clientSlot
	}
	return p
}
