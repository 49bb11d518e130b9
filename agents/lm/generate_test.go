package lm

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// generateWith completes prompts through a new generator of slots slots.
func generateWith(t *testing.T, m *Model, slots int, prompts [][]int32, opt SampleOptions) []Completion {
	t.Helper()
	g, err := m.NewGenerator(slots, 64)
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Generate(prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameCompletions(t *testing.T, what string, got, want []Completion) {
	t.Helper()
	for i := range want {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.Equal(got[i].LogProbs, want[i].LogProbs) || got[i].Finish != want[i].Finish {
			t.Fatalf("%s, prompt %d: %v %v, want %v %v", what, i, got[i].Tokens, got[i].LogProbs, want[i].Tokens, want[i].LogProbs)
		}
	}
}

// A generator that packs its weights (enough slots for the CPU's packed
// products) packs them again in every call: trained in place between two
// calls, as the RL loop does, its model generates what a fresh copy of
// the trained weights does, and a packed product gives the bits of an
// unpacked one (each prompt alone, one slot).
func TestPackedGeneratorFollowsWeightUpdates(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	for _, arch := range []string{"qwen2", "llama"} {
		m := loadTest(t, dev, arch)
		r := rand.New(rand.NewPCG(5, 6))
		prompts := testPrompts(r, 128, 5, 9, 1, 12, 7, 3, 20, 4, 6, 11)
		opt := SampleOptions{MaxNewTokens: 12, Temperature: 1, Seed: 40}
		g, err := m.NewGenerator(8, 64)
		if err != nil {
			t.Fatal(err)
		}
		if g.packer == nil {
			t.Fatal("a generator of 8 slots on the CPU does not pack its weights")
		}
		before, err := g.Generate(prompts, opt)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range prompts {
			o := opt
			o.Seeds = []uint64{opt.Seed + uint64(i)}
			sameCompletions(t, arch+" alone vs packed", generateWith(t, m, 1, [][]int32{p}, o), before[i:i+1])
		}

		// One Adam step on random gradients, in place.
		n := m.NumParams()
		grads, mom, vel := dev.Alloc(1, n), dev.Alloc(1, n), dev.Alloc(1, n)
		gr := dev.Data(grads)
		for i := range gr {
			gr[i] = float32(r.NormFloat64())
		}
		dev.Adam(m.Params, grads, mom, vel, gpu.AdamArgs{LR: 0.02, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1})

		after, err := g.Generate(prompts, opt)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := New(dev, m.Config, 0)
		if err != nil {
			t.Fatal(err)
		}
		dev.Upload(fresh.Params, dev.Data(m.Params))
		sameCompletions(t, arch+" after the update vs a fresh model", after, generateWith(t, fresh, 8, prompts, opt))
		changed := false
		for i := range prompts {
			changed = changed || !slices.Equal(after[i].LogProbs, before[i].LogProbs)
		}
		if !changed {
			t.Fatal("the update changed no log-probability: the test would not see stale packs")
		}
	}
}

// A generator whose packed weights would not fit the model's memory limit
// streams the weights unpacked instead of refusing, and generates the same
// completions, bit for bit, as one that packs.
func TestGeneratorWithoutRoomForPacks(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m := loadTest(t, dev, "qwen2")
	r := rand.New(rand.NewPCG(7, 8))
	prompts := testPrompts(r, 128, 5, 9, 1)
	opt := SampleOptions{MaxNewTokens: 12, Temperature: 1, Seed: 41}
	packing, err := m.NewGenerator(1, 64)
	if err != nil {
		t.Fatal(err)
	}
	if packing.packer == nil {
		t.Fatal("a one-slot generator on the CPU does not pack its weights")
	}
	want, err := packing.Generate(prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	rows := 1 + prefillChunk
	unpacked := GeneratorBytes(m.Config, 1, 64, rows, false)
	packed := GeneratorBytes(m.Config, 1, 64, rows, true)
	m.MemoryLimit = modelBytes(m.Config, m.HasGrads()) + (unpacked+packed)/2
	defer func() { m.MemoryLimit = 0 }()
	g, err := m.NewGenerator(1, 64)
	if err != nil {
		t.Fatalf("a generator that fits without its packs was refused: %v", err)
	}
	if g.packer != nil {
		t.Fatal("the generator packs its weights beyond the memory limit")
	}
	got, err := g.Generate(prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	sameCompletions(t, "unpacked vs packed", got, want)
	m.MemoryLimit = modelBytes(m.Config, m.HasGrads()) + unpacked - 1
	if _, err := m.NewGenerator(1, 64); err == nil || !strings.Contains(err.Error(), "generate fewer sequences") {
		t.Fatalf("a generator beyond the limit even unpacked: %v, want a refusal that says how to shrink it", err)
	}
}

// Completions of one prompt (an RL group) share its prefill: the copies'
// caches are filled from the first's, and every completion is the one its
// prompt and seed give alone, bit for bit, however the slots are shared
// and whether or not a donor is still there to copy from.
func TestSharedPromptsGiveTheirOwnCompletions(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m := loadTest(t, dev, "qwen3")
	r := rand.New(rand.NewPCG(7, 7))
	a, b, c := testPrompts(r, 128, 9, 14, 1)[0], testPrompts(r, 128, 14)[0], []int32{3}
	prompts := [][]int32{a, a, b, a, c, b, c, a, a, b, a, a}
	for _, tc := range []struct {
		slots, newTokens int
		stop             []int32
		shares           bool
	}{
		{8, 10, nil, true},
		{3, 10, nil, true},
		{12, 1, nil, false}, // each donor is done before a copy could start
		{8, 16, []int32{5, 9, 17, 33, 60, 100}, true},
	} {
		opt := SampleOptions{MaxNewTokens: tc.newTokens, Temperature: 1.1, TopK: 40, Seed: 3, StopIDs: tc.stop}
		g, err := m.NewGenerator(tc.slots, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.Generate(prompts, opt)
		if err != nil {
			t.Fatal(err)
		}
		if shares := g.copies > 0; shares != tc.shares {
			t.Fatalf("%d slots, %d new tokens: %d prompts copied", tc.slots, tc.newTokens, g.copies)
		}
		same := 0
		for i, p := range prompts {
			o := opt
			o.Seeds = []uint64{opt.Seed + uint64(i)}
			sameCompletions(t, "shared prefill vs alone", got[i:i+1], generateWith(t, m, 1, [][]int32{p}, o))
			if i > 0 && slices.Equal(got[i].Tokens, got[0].Tokens) {
				same++
			}
		}
		if same == len(prompts)-1 {
			t.Fatal("every completion is the same: the seeds did not differ")
		}
	}
}
