package speech

import "context"

// Quote prices a speech request without running it: the same resolution
// and policy as Speak (voice, model, key scope, the text cut into the
// model's pieces), no moderation and no provider call. A request with
// fallbacks is quoted at its first choice, the target Speak tries first.
// The figure is the one Speak reserves from budgets in money and logs as
// the row's cost_estimate.
func (s *Service) Quote(ctx context.Context, org string, req *Request, ep Delivery) (*Quoted, error) {
	j, err := s.prepare(ctx, org, req, ep)
	if err != nil {
		return nil, err
	}
	return s.quoteJobs(j), nil
}

// QuoteConversation prices a conversation request without running it:
// every turn's calls, as Converse would make them.
func (s *Service) QuoteConversation(ctx context.Context, org string, req *ConversationRequest, timestamps bool) (*Quoted, error) {
	jobs, err := s.prepareConversation(ctx, org, req, timestamps)
	if err != nil {
		return nil, err
	}
	return s.quoteJobs(jobs...), nil
}

func (s *Service) quoteJobs(jobs ...*Job) *Quoted {
	q := &Quoted{Currency: s.currency, Calls: []Call{}}
	for _, j := range jobs {
		for _, c := range s.priceCalls(j) {
			q.Cost += c.Cost
			q.Calls = append(q.Calls, c)
		}
	}
	return q
}
