package speech

import (
	"math"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/store"
)

// logRow returns the request-log fields that describe j.
func (s *Service) logRow(j *Job) store.LogRow {
	row := store.LogRow{
		Provider:    j.Provider.ID,
		Model:       j.Model.ID,
		VoiceID:     j.Voice,
		VoiceRef:    j.VoiceRef,
		CharCount:   utf8.RuneCountInString(j.Text),
		CreditsUsed: s.credits(j),
		Currency:    j.Provider.Policy.Currency,
	}
	row.Cost = s.estimate(j)
	row.CostEstimate = row.Cost
	if len(j.Options) > 0 {
		row.ProviderOptions = string(j.Options)
	}
	v := j.Verdict
	row.ModerationDecision = v.Decision
	row.ModerationReasonType = v.ReasonType
	row.ModerationReasonDetail = v.ReasonDetail
	row.ModerationConfidence = v.Confidence
	row.ModerationLatencyMS = v.Latency.Milliseconds()
	return row
}

// credits returns the credits charged for chars characters on j's model.
func (s *Service) credits(j *Job) int {
	rate := j.Provider.Policy.CreditsPer1kChars
	if r, ok := j.Provider.Policy.ModelCredits[j.Model.ID]; ok {
		rate = r
	}
	return int(math.Ceil(float64(utf8.RuneCountInString(j.Text)) * rate / 1000))
}
