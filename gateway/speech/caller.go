package speech

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Caller is the API key a request came with: its scope bounds which
// providers and models the request may use, and its budget what it may
// spend (beside its organization's).
type Caller struct {
	KeyID string
	// Scope is nil for a key without one.
	Scope *store.KeyScope
}

type callerKey struct{}

// WithCaller returns ctx carrying c. The edge sets it once per request;
// the use cases read it where they decide policy and billing.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the caller ctx carries (the zero Caller, with no
// scope, when none: internal calls).
func callerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// checkScope refuses a job its caller's key may not run.
func checkScope(ctx context.Context, j *Job) error {
	if c := callerFrom(ctx); !c.Scope.Allows(j.Provider.ID, j.Model.ID) {
		return problem.New(problem.KeyScopeDenied, "this API key may not use %s/%s", j.Provider.ID, j.Model.ID)
	}
	return nil
}

// reserve takes credits from org's budget and the caller's key's before a
// provider is called. The charge settles once the request's cost is known.
func (s *Service) reserve(ctx context.Context, org string, want budget.Amount) (*budget.Charge, error) {
	c := callerFrom(ctx)
	var keyLimit budget.Limit
	if c.Scope != nil && (c.Scope.Budget > 0 || c.Scope.BudgetCost > 0) {
		keyLimit = budget.Limit{Credits: c.Scope.Budget, Cost: c.Scope.BudgetCost, Period: budget.Period(c.Scope.BudgetPeriod), Currency: s.currency}
	}
	orgLimit := s.orgBudgets[org]
	if s.orgBudget != nil {
		orgLimit = s.orgBudget(org)
	}
	orgLimit.Currency = s.currency
	ch, err := s.budgets.ReserveAmount(ctx, org, orgLimit, c.KeyID, keyLimit, want)
	if err == nil {
		return ch, nil
	}
	// Declared past the common case: errors.As's targets live on the
	// heap, two allocations on every request otherwise.
	var ex *budget.Exceeded
	var un *budget.Unavailable
	switch {
	case errors.As(err, &ex):
		return nil, &problem.Error{Code: problem.BudgetExceeded, Detail: ex.Error(), RetryAfter: time.Until(ex.Reset), Limit: budgetPolicy(ex)}
	case errors.As(err, &un):
		return nil, &problem.Error{Code: problem.BudgetUnavailable, Detail: "the budget cannot be checked right now and this gateway refuses requests it cannot count", RetryAfter: time.Second, Err: err}
	}
	return nil, fmt.Errorf("reserve credits: %w", err)
}

// budgetPolicy describes the budget that refused a request as a quota
// policy for the RateLimit header fields: credits per period, or for a
// budget in money its nano-units per period (the policy's name says
// which: org-budget, key-budget, org-cost-budget, key-cost-budget).
func budgetPolicy(ex *budget.Exceeded) *problem.RateLimit {
	name, start := "org-budget", ex.Reset.AddDate(0, 0, -1)
	if ex.Scope != "organization" {
		name = "key-budget"
	}
	if ex.Money() {
		name = strings.Replace(name, "-budget", "-cost-budget", 1)
		if ex.Limit.Period == budget.Month {
			start = ex.Reset.AddDate(0, -1, 0)
		}
		return &problem.RateLimit{Policy: name, Quota: ex.Quota(), Unit: "nano-" + ex.Unit, Window: ex.Reset.Sub(start), Remaining: ex.Quota() - ex.Spent}
	}
	if ex.Limit.Period == budget.Month {
		start = ex.Reset.AddDate(0, -1, 0)
	}
	return &problem.RateLimit{Policy: name, Quota: ex.Limit.Credits, Unit: "credits", Window: ex.Reset.Sub(start), Remaining: ex.Limit.Credits - ex.Spent}
}
