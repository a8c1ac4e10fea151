package readcache

import (
	"context"

	"github.com/voxgate/voxgate/gateway/store"
)

// The cached reads, and the writes that invalidate them. Every other
// method of store.Backend passes through the embedded backend.

// Every Cache is a whole store.Backend, and satisfies speech.VoiceUpdater.
var _ store.Backend = (*Cache)(nil)

// GetVoice implements store.VoiceStore from memory (see the package
// comment). The voice is shared: callers must not modify it. Hot path.
func (c *Cache) GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error) {
	k := key{orgID, id}
	e := c.voices.lookup(k)
	if fresh(e, c.opts.Now) {
		c.counts[KindVoice][Hit].Add(1)
		return e.val, e.err
	}
	return load(ctx, c, KindVoice, c.voices, k, e, "voice "+orgID+"/"+id,
		func(ctx context.Context) (*store.Voice, error) { return c.Backend.GetVoice(ctx, orgID, id) },
		func(*store.Voice) int { return 1 })
}

// CreateVoice implements store.VoiceStore, and drops a cached "not found".
func (c *Cache) CreateVoice(ctx context.Context, v *store.Voice) error {
	err := c.Backend.CreateVoice(ctx, v)
	c.voices.invalidate(key{v.OrgID, v.ID})
	return c.observe(err)
}

// UpdateVoice implements store.VoiceStore.
func (c *Cache) UpdateVoice(ctx context.Context, v *store.Voice) error {
	err := c.Backend.UpdateVoice(ctx, v)
	c.voices.invalidate(key{v.OrgID, v.ID})
	return c.observe(err)
}

// DeleteVoice implements store.VoiceStore.
func (c *Cache) DeleteVoice(ctx context.Context, orgID, id string) error {
	err := c.Backend.DeleteVoice(ctx, orgID, id)
	c.voices.invalidate(key{orgID, id})
	return c.observe(err)
}

// DictionaryRules implements store.DictionaryStore from memory: the
// organization's default rules and each listed dictionary's are cached
// apart, so a request naming no dictionary (the common case) costs one
// lookup and allocates nothing. Unlike the store's, the answer is not one
// consistent read: each part is the latest this instance has heard of.
// The rules are shared: callers must not modify them. Hot path.
func (c *Cache) DictionaryRules(ctx context.Context, orgID string, ids []string) ([]store.PronunciationRule, [][]store.PronunciationRule, error) {
	defaults, err := c.rulesOf(ctx, orgID, "")
	if err != nil || len(ids) == 0 {
		return defaults, nil, err
	}
	byID := make([][]store.PronunciationRule, len(ids))
	for i, id := range ids {
		if byID[i], err = c.rulesOf(ctx, orgID, id); err != nil {
			return nil, nil, err
		}
	}
	return defaults, byID, nil
}

// rulesOf returns the rules of dictionary id of org, or its default's for
// id "". A missing dictionary is a *store.MissingDictionaryError.
func (c *Cache) rulesOf(ctx context.Context, org, id string) ([]store.PronunciationRule, error) {
	k := key{org, id}
	e := c.rules.lookup(k)
	if fresh(e, c.opts.Now) {
		c.counts[KindRules][Hit].Add(1)
		return e.val, e.err
	}
	return load(ctx, c, KindRules, c.rules, k, e, "dictionary rules "+org+"/"+id,
		func(ctx context.Context) ([]store.PronunciationRule, error) {
			if id == "" {
				defaults, _, err := c.Backend.DictionaryRules(ctx, org, nil)
				return defaults, err
			}
			_, byID, err := c.Backend.DictionaryRules(ctx, org, []string{id})
			if err != nil {
				return nil, err
			}
			return byID[0], nil
		},
		func(rs []store.PronunciationRule) int { return 1 + len(rs) })
}

// CreateDictionary implements store.DictionaryStore, and drops a cached
// "no such dictionary".
func (c *Cache) CreateDictionary(ctx context.Context, d *store.Dictionary, max int) error {
	err := c.Backend.CreateDictionary(ctx, d, max)
	c.invalidateDictionary(d.OrgID, d.ID)
	return c.observe(err)
}

// DefaultDictionary implements store.DictionaryStore. A default it creates
// has no rules, as the cached default rules of an organization without
// one say already.
func (c *Cache) DefaultDictionary(ctx context.Context, orgID string, d *store.Dictionary) (*store.Dictionary, error) {
	out, err := c.Backend.DefaultDictionary(ctx, orgID, d)
	return out, c.observe(err)
}

// DeleteDictionary implements store.DictionaryStore.
func (c *Cache) DeleteDictionary(ctx context.Context, orgID, id string) error {
	err := c.Backend.DeleteDictionary(ctx, orgID, id)
	c.invalidateDictionary(orgID, id)
	return c.observe(err)
}

// UpdateDictionary implements store.DictionaryStore; a dictionary's name
// and description are not cached, its rules do not change.
func (c *Cache) UpdateDictionary(ctx context.Context, d *store.Dictionary) error {
	return c.observe(c.Backend.UpdateDictionary(ctx, d))
}

// CreateRule implements store.DictionaryStore.
func (c *Cache) CreateRule(ctx context.Context, r *store.PronunciationRule, max int) error {
	err := c.Backend.CreateRule(ctx, r, max)
	c.invalidateDictionary(r.OrgID, r.DictionaryID)
	return c.observe(err)
}

// UpdateRule implements store.DictionaryStore.
func (c *Cache) UpdateRule(ctx context.Context, r *store.PronunciationRule) error {
	err := c.Backend.UpdateRule(ctx, r)
	c.invalidateDictionary(r.OrgID, r.DictionaryID)
	return c.observe(err)
}

// DeleteRule implements store.DictionaryStore.
func (c *Cache) DeleteRule(ctx context.Context, orgID, dictID, id string) error {
	err := c.Backend.DeleteRule(ctx, orgID, dictID, id)
	c.invalidateDictionary(orgID, dictID)
	return c.observe(err)
}

// GetSecret implements store.SecretStore from memory: the sealed value,
// shared (callers must not modify it). Hot path for organizations that
// bring their own provider keys.
func (c *Cache) GetSecret(ctx context.Context, orgID, name string) ([]byte, error) {
	k := key{orgID, name}
	e := c.secrets.lookup(k)
	if fresh(e, c.opts.Now) {
		c.counts[KindSecret][Hit].Add(1)
		return e.val, e.err
	}
	return load(ctx, c, KindSecret, c.secrets, k, e, "secret "+orgID+"/"+name,
		func(ctx context.Context) ([]byte, error) { return c.Backend.GetSecret(ctx, orgID, name) },
		func([]byte) int { return 1 })
}

// PutSecret implements store.SecretStore.
func (c *Cache) PutSecret(ctx context.Context, orgID, name string, ciphertext []byte) error {
	err := c.Backend.PutSecret(ctx, orgID, name, ciphertext)
	c.secrets.invalidate(key{orgID, name})
	return c.observe(err)
}

// DeleteSecret implements store.SecretStore.
func (c *Cache) DeleteSecret(ctx context.Context, orgID, name string) error {
	err := c.Backend.DeleteSecret(ctx, orgID, name)
	c.secrets.invalidate(key{orgID, name})
	return c.observe(err)
}
