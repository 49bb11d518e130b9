package trainer

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGoldenMetrics pins the arithmetic of training: ten iterations of
// CleanRL's CartPole configuration must give exactly the recorded metrics.
// Speed work (kernels, fusion, running actor and critic on two cores) must
// not change a bit of them; a deliberate numerical change regenerates the
// file with -update and says why in its commit.
func TestGoldenMetrics(t *testing.T) {
	golden := filepath.Join("testdata", "metrics_cartpole_seed1_"+gpu.Kernels()+".jsonl")
	_, recs := train(t, testConfig(t, "trainer.seed=1"), t.TempDir())
	got := stripTiming(recs)
	// One core (no passes side by side, no split products) gives the same.
	if _, one := train(t, testConfig(t, "trainer.seed=1", "trainer.threads=1"), t.TempDir()); stripTiming(one) != got {
		t.Fatal("trainer.threads=1 changes the metrics")
	}
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if os.IsNotExist(err) {
		t.Skipf("no golden metrics for the %s kernels (create them with -update)", gpu.Kernels())
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("metrics differ from %s (regenerate with -update only for a deliberate numerical change):\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}
