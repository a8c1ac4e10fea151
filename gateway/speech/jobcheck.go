package speech

import (
	"context"
)

// CheckVoice resolves req's voice for org as a speech request would (the
// saved voice or inline model, the key's scope, options, capabilities) and
// returns the longest text one provider call of it takes: the model's
// MaxTextChars, capped by limits.max_text_chars. Long-form jobs call it
// when a job is made, so that a job whose voice cannot be used is refused
// at once, and to cut the job's text into chunks the model takes whole.
// req.Text is not looked at.
func (s *Service) CheckVoice(ctx context.Context, org string, req *Request) (maxChars int, err error) {
	probe := *req
	text := "probe"
	probe.Text = &text
	j, err := s.prepare(ctx, org, &probe, DeliverClip)
	if err != nil {
		return 0, err
	}
	maxChars = s.limits.MaxTextChars
	if m := j.Model.MaxTextChars; m > 0 && m < maxChars {
		maxChars = m
	}
	return maxChars, nil
}

// VoiceTarget is the "provider/model" a resolved request renders with.
func (o *Spoken) VoiceTarget() string {
	if o.Job == nil {
		return ""
	}
	return o.Job.Provider.ID + "/" + o.Job.Model.ID
}
