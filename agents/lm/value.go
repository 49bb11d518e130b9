package lm

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

// ValueHead is a critic on the policy's trunk (TRL's
// AutoModelForCausalLMWithValueHead): one linear layer from the final
// hidden state, after the final norm, to a scalar, V = h·w + b. A Pass
// computes it at the scored positions when ForwardOptions.Values names it,
// and its backward adds the value gradient to the head's and the trunk's.
// It lives apart from the model's flat parameters, so a model without one
// is unchanged and is saved as plain Hugging Face weights.
type ValueHead struct {
	// Params and Grads are 1×(hidden+1): the weight, then the bias.
	Params, Grads gpu.Tensor
	w, b, gw, gb  gpu.Tensor
	hidden        int
	dev           gpu.Device
}

// Value-head tensor names as TRL's ValueHead module saves them.
const (
	ValueWeightName = "v_head.summary.weight"
	ValueBiasName   = "v_head.summary.bias"
)

// NewValueHead makes a value head for m on its device, every parameter 0:
// the values start at 0 and the trunk gets no value gradient until the
// head has learnt a direction.
func (m *Model) NewValueHead() *ValueHead {
	h := m.Config.Hidden
	v := &ValueHead{hidden: h, dev: m.Dev, Params: m.Dev.Alloc(1, h+1), Grads: m.Dev.Alloc(1, h+1)}
	v.w, v.b = v.Params.Slice(0, h, 1), v.Params.Slice(h, 1, 1)
	v.gw, v.gb = v.Grads.Slice(0, h, 1), v.Grads.Slice(h, 1, 1)
	m.Dev.Fill(v.Params, 0)
	m.Dev.Fill(v.Grads, 0)
	return v
}

// Len is the number of parameters (hidden + 1).
func (v *ValueHead) Len() int { return v.hidden + 1 }

// Tensors returns the head as TRL names it: the weight [1, hidden] and
// the bias [1].
func (v *ValueHead) Tensors() []safetensors.Tensor {
	host := make([]float32, v.Len())
	v.dev.Download(host, v.Params)
	return []safetensors.Tensor{
		{Name: ValueWeightName, Shape: []int{1, v.hidden}, Data: host[:v.hidden]},
		{Name: ValueBiasName, Shape: []int{1}, Data: host[v.hidden:]},
	}
}

// ValueHeadFile is the file beside a model directory's weights that holds
// its value head (transformers' loaders do not read it).
const ValueHeadFile = "value_head.safetensors"

// Save writes the head to dir/ValueHeadFile, atomically.
func (v *ValueHead) Save(dir string) error {
	return safetensors.Write(filepath.Join(dir, ValueHeadFile), v.Tensors(), map[string]string{"format": "pt"}, safetensors.F32)
}

// Load reads the head from dir/ValueHeadFile; found is false (and the head
// unchanged) when dir has none.
func (v *ValueHead) Load(dir string) (found bool, err error) {
	path := filepath.Join(dir, ValueHeadFile)
	f, err := safetensors.Open(path, safetensors.Options{Finite: true})
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if n := f.Float32Bytes(); n != int64(4*v.Len()) {
		return false, fmt.Errorf("%s holds %d values; a value head for this %d-wide model has %d (another model's?)", path, n/4, v.hidden, v.Len())
	}
	ts, err := f.ReadAll()
	if err != nil {
		return false, err
	}
	w, okW := ts[ValueWeightName]
	b, okB := ts[ValueBiasName]
	if !okW || !okB {
		return false, fmt.Errorf("%s lacks %s or %s", path, ValueWeightName, ValueBiasName)
	}
	if err := v.Set(w.Data, b.Data); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// Set loads the head's parameters from the weight (hidden values) and the
// bias (one), refusing a wrong size or a value that is not finite.
func (v *ValueHead) Set(weight, bias []float32) error {
	if len(weight) != v.hidden || len(bias) != 1 {
		return fmt.Errorf("a value head for a %d-wide model needs %d weights and 1 bias, got %d and %d (another model size?)",
			v.hidden, v.hidden, len(weight), len(bias))
	}
	host := append(append(make([]float32, 0, v.Len()), weight...), bias...)
	for i, x := range host {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("value head parameter %d is %v", i, x)
		}
	}
	v.dev.Upload(v.Params, host)
	return nil
}

// ZeroGrad clears the head's gradients (BackwardScores adds to them).
func (v *ValueHead) ZeroGrad() { v.dev.Fill(v.Grads, 0) }
