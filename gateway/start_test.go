package gateway

import (
	"context"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/voxgate/voxgate/config"
)

// TestAdminSocketWhereCommandsLookForIt: the gateway listens on the admin
// socket at AdminSocket, where `voxgate keys` and `voxgate secrets` dial
// it, also when the config file sits in a directory named relative to the
// working directory (voxgate serve --config conf/gateway.yaml).
func TestAdminSocketWhereCommandsLookForIt(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg, err := config.Parse([]byte("server: {listen: '127.0.0.1:0'}\norgs:\n  acme: {}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = "conf" // as config.Load sets it for conf/gateway.yaml
	if err := os.Mkdir("conf", 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	sock := AdminSocket(cfg)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("no admin socket at %s (%v)", sock, err)
	}
}
