// Package pgtest starts throwaway PostgreSQL servers for tests and
// benchmarks: Debian's initdb and pg_ctl, a data directory in a temporary
// directory, a free loopback port, trust authentication, no fsync. Nothing
// touches a system service or a root-only path.
//
// PostgreSQL refuses to run as root. When the process is root (CI, the
// development machines), the server runs as the unprivileged "postgres"
// user that Debian's package creates, or "nobody".
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// User is the database role the servers trust.
const User = "voxgate"

// Server is one running PostgreSQL server.
type Server struct {
	bin  string // directory of initdb, pg_ctl, postgres
	dir  string // the temporary directory holding data/ and the socket
	port int
	cred *syscall.Credential

	// durable keeps fsync on (benchmarks measure what production pays).
	durable bool

	mu      sync.Mutex
	running bool
	dbs     int
}

// Start initializes a cluster in a new temporary directory and starts it.
// The caller stops it with Close. It fails with instructions when the
// PostgreSQL binaries are missing.
func Start() (*Server, error) { return start(false) }

// StartDurable is Start with fsync on, as a production server runs:
// for benchmarks of writes, which a test server's fsync=off would flatter.
func StartDurable() (*Server, error) { return start(true) }

func start(durable bool) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "voxgate-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, durable: durable}
	if os.Geteuid() == 0 {
		if s.cred, err = unprivileged(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", User, "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Main runs a package's tests against one shared server, started before
// them and closed after, set in *s: a package's TestMain is
// os.Exit(pgtest.Main(m, &server)). One server per package saves an initdb per test: each test
// takes a fresh database on it (NewDatabaseT).
func Main(m *testing.M, s **Server) int {
	srv, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*s = srv
	defer srv.Close()
	return m.Run()
}

// StartT starts a server for one test (or one package's tests) and stops
// it when the test ends.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// Port is the TCP port the server listens on (127.0.0.1).
func (s *Server) Port() int { return s.port }

// Start starts a stopped server again on the same port and data. fsync is
// off (the machine does not crash under a test) but every commit still
// reaches the OS before it returns (synchronous_commit stays on), so Stop,
// which kills the server like a crash, loses nothing acknowledged.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	opts := fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c max_connections=200", s.port, s.dir)
	if !s.durable {
		opts += " -c fsync=off -c full_page_writes=off"
	}
	if out, err := s.run("pg_ctl", "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	s.running = true
	return nil
}

// Stop stops the server at once (immediate mode: connections are cut, as
// when a database server dies), keeping its data for Start.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
	}
	s.running = false
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	_ = s.Stop()
	os.RemoveAll(s.dir)
}

// DSN returns the URL of database db on this server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.port, db)
}

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase() (string, error) {
	s.mu.Lock()
	s.dbs++
	name := "db" + strconv.Itoa(s.dbs)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return s.DSN(name), nil
}

// NewDatabaseT is NewDatabase for a test.
func (s *Server) NewDatabaseT(tb testing.TB) string {
	tb.Helper()
	dsn, err := s.NewDatabase()
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// run runs a PostgreSQL program as the server's user.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, prog), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// findBin finds the newest PostgreSQL server binaries.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: PostgreSQL server binaries (initdb, pg_ctl) not found: run `make deps`, which installs Debian's postgresql package")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// unprivileged returns the credentials to run PostgreSQL as when root.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("pgtest: running as root and there is no postgres or nobody user to run PostgreSQL as")
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
