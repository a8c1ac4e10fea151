package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// ErrNotRunning reports that no gateway listens on the socket.
var ErrNotRunning = errors.New("no gateway is listening on the admin socket")

// Client talks to a running gateway's admin socket.
type Client struct {
	hc *http.Client
}

// Dial returns a client for the socket at path, or ErrNotRunning when no
// gateway answers there.
func Dial(ctx context.Context, path string) (*Client, error) {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, ErrNotRunning
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://voxgate-admin"+path, &body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("gateway refused: %s", e.Error)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// CreateKey asks the gateway for a new key of org with scope (nil: none).
func (c *Client) CreateKey(ctx context.Context, org, name string, scope *ScopeView) (KeyView, error) {
	var v KeyView
	err := c.do(ctx, http.MethodPost, "/keys", map[string]any{"org": org, "name": name, "scope": scope}, &v)
	return v, err
}

// CreateAdminKey creates an admin key (shown once, in the result's Key).
func (c *Client) CreateAdminKey(ctx context.Context, name string) (KeyView, error) {
	var v KeyView
	err := c.do(ctx, http.MethodPost, "/keys", map[string]any{"name": name, "admin": true}, &v)
	return v, err
}

// ListKeys lists keys (all orgs when org is "").
func (c *Client) ListKeys(ctx context.Context, org string) ([]KeyView, error) {
	var v []KeyView
	err := c.do(ctx, http.MethodGet, "/keys?org="+url.QueryEscape(org), nil, &v)
	return v, err
}

// RevokeKey revokes a key by id.
func (c *Client) RevokeKey(ctx context.Context, id string) (KeyView, error) {
	var v KeyView
	err := c.do(ctx, http.MethodPost, "/keys/"+url.PathEscape(id)+"/revoke", nil, &v)
	return v, err
}

// SetSecret stores an org's provider key (encrypted by the gateway).
func (c *Client) SetSecret(ctx context.Context, org, provider, value string) error {
	return c.do(ctx, http.MethodPut, "/secrets/"+url.PathEscape(org)+"/"+url.PathEscape(provider), map[string]string{"value": value}, nil)
}

// DeleteSecret removes an org's provider key.
func (c *Client) DeleteSecret(ctx context.Context, org, provider string) error {
	return c.do(ctx, http.MethodDelete, "/secrets/"+url.PathEscape(org)+"/"+url.PathEscape(provider), nil, nil)
}

// ErrReloadRefused is returned by Reload when the gateway refused the
// configuration; the view lists why.
var ErrReloadRefused = errors.New("reload refused; the gateway runs as it was")

// Reload asks the gateway to read its configuration file again and swap
// it in. A refused reload returns its view (every mistake) and
// ErrReloadRefused. ctx bounds the wait: a reload that starts plugins
// takes as long as they take to start.
func (c *Client) Reload(ctx context.Context) (ReloadView, error) {
	var v ReloadView
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://voxgate-admin/reload", nil)
	if err != nil {
		return v, err
	}
	hc := *c.hc
	hc.Timeout = 0 // ctx's deadline, not the client's 30 s
	resp, err := hc.Do(req)
	if err != nil {
		return v, fmt.Errorf("admin socket: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusConflict:
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return v, fmt.Errorf("admin socket: %w", err)
		}
		if resp.StatusCode == http.StatusConflict {
			return v, ErrReloadRefused
		}
		return v, nil
	case http.StatusNotFound:
		return v, errors.New("this gateway does not reload its configuration (started without a config file, or an older version)")
	}
	var e struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return v, fmt.Errorf("gateway refused: %s (status %d)", e.Error, resp.StatusCode)
}
