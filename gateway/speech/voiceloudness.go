package speech

import (
	"container/list"
	"math"
	"sync"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
)

// Stream leveling (the loudness field on /v1/audio/speech/stream).
const (
	// maxLearnedVoices bounds the voices whose loudness the gateway
	// remembers; the least recently used is forgotten first.
	maxLearnedVoices = 4096
	// learnWeight is how much one new measurement moves a voice's
	// estimate (an exponential average: texts differ, the voice does not).
	learnWeight = 0.3
	// StreamLookahead is how much of a stream of a voice never measured
	// before is held back and measured before its first audio leaves:
	// the added time to first audio for such a voice (and no more than
	// the stream itself, for a shorter one). Two seconds hold several
	// 400 ms gating blocks of speech, enough for an estimate within a
	// LU or two; later streams of the voice use what this one measured.
	StreamLookahead = 2 * time.Second
)

// voiceLoudness remembers each voice's (organization, provider, model,
// voice) loudness,
// learned from its leveled clips and streams, in a bounded LRU: a stream
// cannot be measured before it is sent, so its gain comes from the
// voice's past. In memory only: a restart learns again.
type voiceLoudness struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used; values are *voiceEntry
	byKey map[string]*list.Element
}

type voiceEntry struct {
	key  string
	lufs float64
}

func newVoiceLoudness(max int) *voiceLoudness {
	return &voiceLoudness{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// voiceKey names a voice of one organization: estimates are not shared
// between organizations, or whether a stream is held back for measuring
// would tell one organization that another used a voice (a cloned
// voice's id, say).
func voiceKey(j *Job) string {
	return j.Org + "\x00" + j.Provider.ID + "\x00" + j.Model.ID + "\x00" + j.Voice
}

// estimate returns the voice's learned loudness, or NaN.
func (v *voiceLoudness) estimate(key string) float64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byKey[key]
	if !ok {
		return math.NaN()
	}
	v.order.MoveToFront(e)
	return e.Value.(*voiceEntry).lufs
}

// learn folds a measurement of the voice into its estimate; silence and
// -Inf (a stream too short to gate) teach nothing.
func (v *voiceLoudness) learn(key string, lufs float64) {
	if !(lufs >= audio.GateLufs) || math.IsInf(lufs, 0) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.byKey[key]; ok {
		ve := e.Value.(*voiceEntry)
		ve.lufs += (lufs - ve.lufs) * learnWeight
		v.order.MoveToFront(e)
		return
	}
	v.byKey[key] = v.order.PushFront(&voiceEntry{key: key, lufs: lufs})
	for v.order.Len() > v.max {
		old := v.order.Back()
		v.order.Remove(old)
		delete(v.byKey, old.Value.(*voiceEntry).key)
	}
}
