package main

import (
	"context"
	"testing"
)

// The optimal return is 1 − 9·0.01 = 0.91 (ten steps right); a random walk
// rarely reaches the end within 50 steps.
func TestCorridorLearns(t *testing.T) {
	sum, err := train(context.Background(), 50_000, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(sum.Last.EpReturnMean); got < 0.85 {
		t.Fatalf("ep_return_mean %.3f after %d steps, want ≥ 0.85", got, sum.Last.Step)
	}
	t.Logf("ep_return_mean %.3f after %d steps", float64(sum.Last.EpReturnMean), sum.Last.Step)
}
