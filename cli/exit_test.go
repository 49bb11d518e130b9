package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalExitsOneWhenTheWorldFails: eval used to call every failure a
// configuration error (exit 2). A run whose remote environment's server
// dies is the world failing: exit 1, as in train; a mistake in what eval is
// asked still exits 2, recognised by the one mapping (cmdutil.ExitCode)
// with no wrapping in the command.
func TestEvalExitsOneWhenTheWorldFails(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 for the remote environment's server")
	}
	dir := t.TempDir()
	for _, f := range []string{"cartpole_server.py", "protocol.py"} {
		data, err := os.ReadFile(filepath.Join("..", "remote", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	server, run, ctx := filepath.Join(dir, "cartpole_server.py"), filepath.Join(dir, "run"), context.Background()
	if code, _, stderr := runCLI(ctx, "train", "--quiet", "--run-dir", run, "env.id=remote", `env.args.command=["python3", "`+server+`"]`,
		"ppo.total_timesteps=512", "trainer.device=cpu"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(ctx, "eval", run, "--episodes", "1"); code != 0 || !strings.Contains(stdout, "1 episode,") {
		t.Fatalf("eval with its server: exit %d, %q %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(ctx, "eval", run, "--tasks", "val"); code != 2 || !strings.Contains(stderr, "no validation tasks") {
		t.Errorf("eval --tasks val of a run without them: exit %d (want 2), stderr %q", code, stderr)
	}
	if err := os.WriteFile(server, []byte("import sys\nsys.exit(3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(ctx, "eval", run, "--episodes", "1"); code != 1 || !strings.Contains(stderr, "the server process exited") {
		t.Errorf("eval whose server dies: exit %d (want 1), stderr %q", code, stderr)
	}
}
