package pluginpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the protocol's Go code as
// `make proto` does (protoc from the system, its Go plugins at the
// versions go.mod pins) and compares it with the committed files: an edit
// of voxgate.proto without regenerating, or a plugin version that does not
// reproduce the committed code, fails here.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("protoc is not installed: `make deps` installs protobuf-compiler")
		}
		t.Skip("protoc is not installed (`make deps` installs it)")
	}
	tools := t.TempDir()
	build := exec.Command("go", "build", "-o", tools, "google.golang.org/protobuf/cmd/protoc-gen-go", "google.golang.org/grpc/cmd/protoc-gen-go-grpc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the protoc plugins: %v\n%s", err, out)
	}
	out := t.TempDir()
	gen := exec.Command("protoc", "--proto_path=.", "--go_out="+out, "--go_opt=paths=source_relative",
		"--go-grpc_out="+out, "--go-grpc_opt=paths=source_relative", "voxgate.proto")
	gen.Env = append(os.Environ(), "PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"))
	if b, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	for _, f := range []string{"voxgate.pb.go", "voxgate_grpc.pb.go"} {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what `make proto` generates: run it and commit the result", f)
		}
	}
}
