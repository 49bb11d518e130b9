package lm

import (
	"fmt"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
)

// Memory is estimated before anything large is allocated, so that a model
// or a batch that cannot fit is refused with the figures instead of ending
// in Go's fatal out-of-memory error.

// modelBytes is the weights and, when grads, their gradients, as
// float32, with the largest tensor staged once more while loading.
func modelBytes(c *hf.Config, grads bool) int64 {
	d := dimsOf(c)
	per := int64(4)
	if grads {
		per = 8
	}
	return per*c.Params() + 4*int64(max(d.vocab*d.h, d.h*2*d.inter))
}

// TrainBytes adds Adam's two moments to the weights and gradients: what a
// training of c holds besides its passes.
func TrainBytes(c *hf.Config) int64 { return modelBytes(c, true) + 8*c.Params() }

// logitsBudget bounds the logits a pass holds at once (its chunk).
const logitsBudget = 64 << 20

// passChunk is the number of selected rows whose logits a pass holds at
// once for a vocabulary of v.
func passChunk(v, selected int) int {
	return max(1, min(selected, logitsBudget/(4*v)))
}

// PassBytes is what a Pass for up to tokens tokens, selected of them
// scored, holds: every layer's saved activations, the scratch of one
// layer's backward, and a chunk of logits.
func PassBytes(c *hf.Config, tokens, selected int) int64 {
	d := dimsOf(c)
	n, l := int64(tokens), int64(c.Layers)
	saved := 2*d.h + d.qkv + d.q + d.heads + 2*d.inter + 2
	scratch := 3*d.h + d.qkv + d.q + d.heads + d.kvHeads + 2*d.inter + 2*d.inter + d.h
	if c.QKNorm { // attention's input beside the saved projection
		scratch += d.qkv
	}
	sel := int64(selected) * int64(2*d.h+4)
	return 4 * (n*l*int64(saved) + n*int64(d.h) + n*int64(scratch) + sel + int64(passChunk(d.vocab, selected))*int64(d.vocab))
}

// GeneratorBytes is what a Generator of slots sequences of up to maxLen
// tokens holds: its KV cache, one step's scratch for up to rows tokens,
// the logits of every slot and, when packed, a copy of the weights of
// every product laid out for the device (gpu.WeightPacker).
func GeneratorBytes(c *hf.Config, slots, maxLen, rows int, packed bool) int64 {
	d := dimsOf(c)
	cache := 2 * int64(c.Layers) * int64(slots) * int64(maxLen) * int64(d.kv)
	step := int64(rows) * int64(2*d.h+d.qkv+d.q+d.heads+d.kvHeads+3*d.inter)
	var packs int64
	if packed {
		packs = int64(layerParams(c) + headParams(c))
	}
	return 4 * (cache + step + 2*int64(slots)*int64(d.vocab) + packs)
}

// checkMemory refuses a plan of need bytes beyond the model's limit (with
// the model's own weights counted), naming what and how to shrink it.
func (m *Model) checkMemory(need int64, what, fix string) error {
	if m.fits(need) {
		return nil
	}
	return fmt.Errorf("%s would need about %s besides the model's %s, more than the %s available; %s",
		what, bytesText(need), bytesText(modelBytes(m.Config, m.HasGrads())), bytesText(m.MemoryLimit), fix)
}

// fits says whether a plan of need bytes fits the model's limit beside
// the model's own weights (always, without a limit).
func (m *Model) fits(need int64) bool {
	return m.MemoryLimit <= 0 || need+modelBytes(m.Config, m.HasGrads()) <= m.MemoryLimit
}

func bytesText(b int64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(b)/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
}

// ParamCount writes a parameter count as people do: 653K, 135M, 1.2B.
func ParamCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%dK", n/1000)
	}
	return fmt.Sprint(n)
}
