package sft

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A training stopped in the middle of an epoch and continued from its
// state file ends with the very parameters and figures of one that ran
// through; a state of a training that ended is not trained again; a state
// of other settings or a damaged one is refused, saying how to start over.
func TestTrainResumesFromItsState(t *testing.T) {
	o := DefaultTrainOptions
	o.Epochs, o.BatchTokens, o.LearningRate, o.WeightDecay, o.Seed, o.EvalEvery = 3, 80, 1e-2, 0.01, 1, 3
	params := func(s setup) []float32 {
		h := make([]float32, s.Model.NumParams())
		s.Model.Dev.Download(h, s.Model.Params)
		return h
	}
	ref := charSetup(t, shape{32, 64, 1, 2}, 2)
	exs := additionExamples(t, ref, 8)
	want, err := Train(context.Background(), ref.Model, exs, exs[:2], o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.Steps < 6 {
		t.Fatalf("only %d steps: the test needs several batches an epoch", want.Steps)
	}
	o.State = filepath.Join(t.TempDir(), "state.safetensors")
	// Cut inside the second epoch, then inside the last (whose mean loss
	// the result reports), each time from a new start; the first starts
	// from the reference's initialisation, later ones from another (the
	// state's parameters win).
	for i, cut := range []int{want.Steps/3 + 1, want.Steps - 1} {
		ctx, cancel := context.WithCancel(context.Background())
		s := charSetup(t, shape{32, 64, 1, 2}, uint64(2+8*i)) // the reference's initialisation first, then another's
		part, err := Train(ctx, s.Model, exs, exs[:2], o, func(p Progress) {
			if p.Step == cut {
				cancel()
			}
		})
		cancel()
		if err != nil || !part.StoppedEarly || part.Steps != cut {
			t.Fatalf("the training cut at step %d: %v, %+v", cut, err, part)
		}
	}
	// The last start.
	again := charSetup(t, shape{32, 64, 1, 2}, 9)
	got, err := Train(context.Background(), again.Model, exs, exs[:2], o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps != want.Steps || got.Tokens != want.Tokens || got.TrainLoss != want.TrainLoss || got.HeldOutLoss != want.HeldOutLoss || got.StoppedEarly {
		t.Fatalf("resumed: %+v\nthrough: %+v", got, want)
	}
	if !slices.Equal(params(again), params(ref)) {
		t.Fatal("the resumed training's parameters differ from those of one that ran through")
	}
	// Ended: loaded, not trained again.
	done := charSetup(t, shape{32, 64, 1, 2}, 5)
	res, err := Train(context.Background(), done.Model, exs, exs[:2], o, func(Progress) { t.Fatal("an ended training trained again") })
	if err != nil || res.Steps != want.Steps || res.TrainLoss != want.TrainLoss || !slices.Equal(params(done), params(ref)) {
		t.Fatalf("an ended state: %v, %+v", err, res)
	}
	other := o
	other.Epochs = 4
	if _, err := Train(context.Background(), done.Model, exs, exs[:2], other, nil); err == nil || !strings.Contains(err.Error(), "other examples or settings") ||
		!strings.Contains(err.Error(), "remove it to start the phase over") {
		t.Fatalf("a state of other settings: %v", err)
	}
	if _, err := Train(context.Background(), done.Model, exs[1:], exs[:2], o, nil); err == nil || !strings.Contains(err.Error(), "other examples") {
		t.Fatalf("a state of other examples: %v", err)
	}
	if err := os.WriteFile(o.State, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Train(context.Background(), done.Model, exs, exs[:2], o, nil); err == nil || !strings.Contains(err.Error(), "remove it to start the phase over") {
		t.Fatalf("a damaged state: %v", err)
	}
}
