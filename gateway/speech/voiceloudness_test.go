package speech

import (
	"math"
	"strconv"
	"testing"
)

func TestVoiceLoudnessLearnsAndForgets(t *testing.T) {
	v := newVoiceLoudness(3)
	if !math.IsNaN(v.estimate("a")) {
		t.Fatal("an unknown voice has an estimate")
	}
	v.learn("a", -20)
	v.learn("a", -10)
	if got := v.estimate("a"); math.Abs(got-(-20+10*learnWeight)) > 1e-9 {
		t.Errorf("a: %g after -20 then -10", got)
	}
	v.learn("a", math.Inf(-1)) // a stream too short to gate teaches nothing
	v.learn("b", -80)          // nor silence
	if !math.IsNaN(v.estimate("b")) {
		t.Error("silence was learned")
	}
	for i := range 3 {
		v.learn(strconv.Itoa(i), -20)
	}
	// "a" was the least recently used of four: forgotten.
	if !math.IsNaN(v.estimate("a")) || v.order.Len() != 3 || len(v.byKey) != 3 {
		t.Errorf("bound 3: a=%g, %d in the list, %d in the map", v.estimate("a"), v.order.Len(), len(v.byKey))
	}
}
