package edge

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/speech"
)

// Quotes: what a request would cost, before it is made. Each takes the
// body of the route it quotes and answers without synthesis (no
// moderation, no provider call, no log row, nothing reserved).

// quoteJSON is the body of a quote's answer.
type quoteJSON struct {
	Cost     json.Number     `json:"cost"`
	Currency string          `json:"currency"`
	Calls    []quoteCallJSON `json:"calls"`
}

// quoteCallJSON is one provider call the request would make.
type quoteCallJSON struct {
	Provider string           `json:"provider"`
	Model    string           `json:"model"`
	Units    map[string]int64 `json:"units"`
	Cost     json.Number      `json:"cost"`
}

func quoteOut(q *speech.Quoted) quoteJSON {
	out := quoteJSON{Cost: money(q.Cost), Currency: q.Currency, Calls: make([]quoteCallJSON, len(q.Calls))}
	for i, c := range q.Calls {
		units := map[string]int64{}
		for _, p := range c.Prices {
			units[string(p.Unit)] = c.Units.Get(p.Unit)
		}
		out.Calls[i] = quoteCallJSON{Provider: c.Provider, Model: c.Model, Units: units, Cost: money(c.Cost)}
	}
	return out
}

// quoteSpeech serves POST /v1/audio/speech/quote: decode the speech body,
// Quote, encode.
func (s *Server) quoteSpeech(ctx *fasthttp.RequestCtx, c *exchange) error {
	var body speechRequestJSON
	if err := s.decodeSpeechBody(ctx, &body); err != nil {
		return err
	}
	req, err := body.domain()
	if err != nil {
		return err
	}
	q, err := c.live.Speech.Quote(c.ctx, c.p.OrgID, req, speech.DeliverClip)
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[quoteJSON]{quoteOut(q)})
}

// quoteConversation serves POST /v1/audio/conversation/quote.
func (s *Server) quoteConversation(ctx *fasthttp.RequestCtx, c *exchange) error {
	var body conversationRequestJSON
	if err := s.decodeJSON(ctx, &body); err != nil {
		return err
	}
	req, err := body.domain()
	if err != nil {
		return err
	}
	q, err := c.live.Speech.QuoteConversation(c.ctx, c.p.OrgID, req, false)
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[quoteJSON]{quoteOut(q)})
}
