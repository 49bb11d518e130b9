package agents_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// torchPython finds a python3 that imports torch ($TORCH_PYTHON first), or
// "" when there is none.
func torchPython() string {
	for _, p := range []string{os.Getenv("TORCH_PYTHON"), "python3", "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	return ""
}

// TestCNNOutputsMatchPyTorch exports a cnn agent as a checkpoint does and
// has scripts/check_cnn_checkpoint.py load it into the PyTorch model that
// agents.CNN documents (load_state_dict, strict) and compare that model's
// logits (or means) and values with the Go agent's on the same
// observations. It skips where no python3 has torch (Debian: apt install
// python3-torch).
func TestCNNOutputsMatchPyTorch(t *testing.T) {
	py := torchPython()
	if py == "" {
		t.Skip("no python3 with torch (apt install python3-torch, or set TORCH_PYTHON)")
	}
	for _, tc := range []struct {
		name       string
		shape      []int
		act        envs.Space
		conv       [][]int
		hidden     []int
		activation string
	}{
		{"MinAtar preset", []int{10, 10, 4}, envs.Space{Kind: envs.Discrete, N: 3}, [][]int{{16, 3, 1}}, []int{128}, "relu"},
		{"two convs, padding, stride, Gaussian", []int{12, 9, 3}, envs.Space{Kind: envs.Box, Dim: 2, Low: []float32{-1, -1}, High: []float32{1, 1}},
			[][]int{{8, 3, 1, 1}, {6, 2, 2}}, []int{32, 16}, "tanh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			H, W, C := tc.shape[0], tc.shape[1], tc.shape[2]
			obsSpace := envs.Space{Kind: envs.Box, Dim: H * W * C, Shape: tc.shape}
			dev := gpu.NewCPU(1)
			defer dev.Close()
			a, err := agents.NewCNN(agents.Build{Obs: obsSpace, Act: tc.act, Config: agents.Config{"conv": tc.conv, "hidden": tc.hidden, "activation": tc.activation},
				Device: dev, RNG: rand.New(rand.NewPCG(3, 4))})
			if err != nil {
				t.Fatal(err)
			}
			// Non-zero biases, so that a bias in the wrong place shows.
			params := make([]float32, a.Params().Len())
			dev.Download(params, a.Params())
			r := rand.New(rand.NewPCG(5, 6))
			for i := range params {
				params[i] += float32(0.05 * r.NormFloat64())
			}
			dev.Upload(a.Params(), params)

			var tensors []runstore.Tensor
			for _, nt := range a.Tensors() {
				td := runstore.Tensor{Name: nt.Name, Shape: nt.ExportShape(), Data: make([]float32, nt.T.Len())}
				nt.Export(td.Data, params[nt.T.Offset():nt.T.Offset()+nt.T.Len()])
				tensors = append(tensors, td)
			}
			convTOML, _ := json.Marshal(tc.conv)
			hiddenTOML, _ := json.Marshal(tc.hidden)
			meta := map[string]string{"config": fmt.Sprintf("[agent]\nname = \"cnn\"\nconv = %s\nhidden = %s\nactivation = %q\n",
				convTOML, hiddenTOML, tc.activation)}
			file, err := runstore.EncodeSafetensors(tensors, meta)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			ckpt := filepath.Join(dir, "step-1.safetensors")
			if err := os.WriteFile(ckpt, file, 0o644); err != nil {
				t.Fatal(err)
			}

			const n = 6
			obs := make([]float32, n*obsSpace.Dim)
			for i := range obs {
				if r.Float64() < 0.15 { // sparse 0/1 frames, as MinAtar's
					obs[i] = 1
				}
			}
			width := tc.act.Dim // a Gaussian's means
			if tc.act.Kind == envs.Discrete {
				width = tc.act.N // logits
			}
			outputs := make([]float32, n*width)
			a.PolicyOutputs(obs, n, outputs)
			values := make([]float32, n)
			a.Values(obs, n, values)
			expect := map[string]any{"obs": rows(obs, n), "logits": rows(outputs, n), "values": values}
			blob, _ := json.Marshal(expect)
			expectPath := filepath.Join(dir, "expect.json")
			if err := os.WriteFile(expectPath, blob, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(py, filepath.Join("..", "scripts", "check_cnn_checkpoint.py"), ckpt,
				fmt.Sprint(H), fmt.Sprint(W), fmt.Sprint(C), "--expect", expectPath).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OK: the PyTorch model reproduces") {
				t.Fatalf("check_cnn_checkpoint.py: %v\n%s", err, out)
			}
			t.Log(lastLine(string(out), "max |torch - go|"))
		})
	}
}

// rows splits a flat n-row slice into its rows, for JSON.
func rows(flat []float32, n int) [][]float32 {
	w := len(flat) / n
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*w : (i+1)*w]
	}
	return out
}

func lastLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
