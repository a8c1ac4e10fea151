package migrate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/voxgate/voxgate/gateway/store"
)

// dictionaries copies org's pronunciation dictionaries and their rules,
// keeping ids and times. The default dictionary goes through
// DefaultDictionary, so a destination that already has a default (the
// gateway ran on it) keeps that one and receives the source default's
// rules. Bounds were enforced when the source was written, so none is
// applied here. A copied dictionary keeps the source's UpdatedAt.
func (m *migration) dictionaries(ctx context.Context, org string) error {
	cd, cr := m.count("dictionaries"), m.count("rules")
	var after store.Position
	for {
		page, next, more, err := m.src.ListDictionaries(ctx, org, 200, after)
		if err != nil {
			return err
		}
		for i := range page {
			d := page[i]
			dstID := d.ID
			if d.IsDefault {
				got, err := m.dst.DefaultDictionary(ctx, org, &d)
				if err != nil {
					return fmt.Errorf("default dictionary: %w", err)
				}
				dstID = got.ID
			} else if err := skipExisting(m.dst.CreateDictionary(ctx, &d, math.MaxInt32)); err != nil {
				return fmt.Errorf("dictionary %s: %w", d.ID, err)
			}
			if err := m.rules(ctx, org, d.ID, dstID, cr); err != nil {
				return fmt.Errorf("dictionary %s: %w", d.ID, err)
			}
			got, err := m.dst.GetDictionary(ctx, org, dstID)
			if err == nil && dstID == d.ID && !got.UpdatedAt.Equal(d.UpdatedAt) {
				// Each copied rule set the dictionary's UpdatedAt to its
				// own creation time, and rules come newest first, so the
				// copy would end at the oldest rule's time. Put back the
				// source's. A destination's own default keeps its time.
				restored := d
				if err := m.dst.UpdateDictionary(ctx, &restored); err != nil {
					return fmt.Errorf("dictionary %s: restore its update time: %w", d.ID, err)
				}
			}
			cd.Source++
			if err == nil {
				cd.Verified++
			}
		}
		if !more {
			break
		}
		after = next
	}
	m.say(fmt.Sprintf("org %s: dictionaries done", org))
	return nil
}

// rules copies the rules of source dictionary srcID into dstID.
func (m *migration) rules(ctx context.Context, org, srcID, dstID string, c *Count) error {
	var after store.Position
	for {
		page, next, more, err := m.src.ListRules(ctx, org, srcID, 200, after)
		if err != nil {
			return err
		}
		for i := range page {
			r := page[i]
			r.DictionaryID = dstID
			err := m.dst.CreateRule(ctx, &r, math.MaxInt32)
			kept := errors.Is(err, store.ErrConflict) && dstID != srcID // the destination's own default has the word
			if err := skipExisting(err); err != nil && !kept {
				return fmt.Errorf("rule %s: %w", r.ID, err)
			}
			c.Source++
			if _, err := m.dst.GetRule(ctx, org, dstID, r.ID); err == nil || kept {
				c.Verified++
			}
		}
		if !more {
			break
		}
		after = next
	}
	return nil
}
