package main

// The tests here build on the real program: they start this test binary
// as agenttrainer (a detached training, bench's training processes, a run
// killed with SIGKILL and resumed).

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli"
)

// TestMain lets a test re-run this binary as the real program, so that it
// can be killed with SIGKILL like any training process.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTTRAINER_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// runCLI runs the command line in this process as main does.
func runCLI(args ...string) (code int, stdout, stderr string) {
	return runCLIContext(context.Background(), args...)
}

func runCLIContext(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.Main(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}
