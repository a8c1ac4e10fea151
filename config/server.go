package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Server holds the HTTP edge settings.
type Server struct {
	// Listen is the TCP address to serve on.
	Listen string `yaml:"listen"`
	// MaxBodyBytes caps request bodies (413 past it).
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// MaxBodyMemory caps the bytes of request bodies held at once, over
	// all connections; a body that would pass it gets a 503. Bodies of
	// up to 8 KiB, which arrive with their headers, are not counted.
	MaxBodyMemory int `yaml:"max_body_memory"`
	// ReadTimeout bounds reading one request (headers and body).
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing one non-streaming response.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle for longer.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// RequestTimeout bounds the whole handling of a synthesis request.
	RequestTimeout Duration `yaml:"request_timeout"`
	// ShutdownTimeout bounds the graceful drain on SIGINT/SIGTERM.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// AccessLog turns the per-request zap line on or off.
	AccessLog *bool `yaml:"access_log"`
	// MaxConns bounds open client connections; past it a new connection
	// gets a 503 and is closed. 0 means derived from the open-files limit
	// at start, keeping descriptors for the store and the plugins.
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerIP bounds open connections from one client address (0 =
	// no per-address bound: behind a load balancer every connection
	// comes from its address).
	MaxConnsPerIP int `yaml:"max_conns_per_ip"`
}

// Admin holds the admin socket used by `voxgate keys` while serving.
type Admin struct {
	// Socket is a unix socket path; "" = next to the storage file.
	Socket string `yaml:"socket"`
}

func (s *Server) defaults() {
	if s.Listen == "" {
		s.Listen = "127.0.0.1:8080"
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = 10 << 20
	}
	if s.MaxBodyMemory == 0 {
		s.MaxBodyMemory = 256 << 20
	}
	if s.ReadTimeout == 0 {
		s.ReadTimeout = Duration(30 * time.Second)
	}
	if s.WriteTimeout == 0 {
		s.WriteTimeout = Duration(120 * time.Second)
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = Duration(120 * time.Second)
	}
	if s.RequestTimeout == 0 {
		s.RequestTimeout = Duration(120 * time.Second)
	}
	if s.ShutdownTimeout == 0 {
		s.ShutdownTimeout = Duration(30 * time.Second)
	}
	if s.AccessLog == nil {
		t := true
		s.AccessLog = &t
	}
}

// validateServer checks the server section.
func (c *Config) validateServer(bad report) {
	if err := CheckListen(c.Server.Listen); err != nil {
		bad("server.listen", "%v", err)
	}
	if c.Server.MaxBodyBytes < 1024 {
		bad("server.max_body_bytes", "must be at least 1024, got %d", c.Server.MaxBodyBytes)
	}
	if largest := largestBody(&c.Server, &c.Limits); c.Server.MaxBodyMemory < largest {
		bad("server.max_body_memory", "must be at least the largest body a route takes (%d bytes: server.max_body_bytes, or limits.max_media_bytes plus 64 KiB), got %d", largest, c.Server.MaxBodyMemory)
	}
	if c.Server.MaxConns < 0 {
		bad("server.max_conns", "must be 0 (derived from the open-files limit) or more, got %d", c.Server.MaxConns)
	}
	if c.Server.MaxConnsPerIP < 0 {
		bad("server.max_conns_per_ip", "must be 0 (no bound) or more, got %d", c.Server.MaxConnsPerIP)
	}
}

// largestBody is the largest body a route takes: server.max_body_bytes,
// or an upload of limits.max_media_bytes with its multipart framing
// (allowed 64 KiB). The memory for bodies must hold it, or it never would
// be taken.
func largestBody(s *Server, l *Limits) int {
	return max(s.MaxBodyBytes, l.MaxMediaBytes+64<<10)
}

// CheckListen checks a TCP listen address: host:port (the host may be
// empty, meaning every interface), with a port from 0 (any free port) to
// 65535.
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:8080, or :8080 for every interface)", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: %q is not a host name or IP address", addr, host)
	}
	return nil
}
