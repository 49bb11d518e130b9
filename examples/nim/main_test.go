package main

import (
	"context"
	"testing"
)

// TestNimSelfPlayLearns trains by self-play, then checks the policy against
// a random opponent and against the known optimal strategy (leave a
// multiple of four sticks).
func TestNimSelfPlayLearns(t *testing.T) {
	at, sum, err := train(context.Background(), 200_000, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Last.ValSuccessRate == nil {
		t.Fatal("no validation record")
	}
	win := float64(*sum.Last.ValSuccessRate)
	t.Logf("win rate against a random player: %.3f", win)
	if win < 0.85 {
		t.Fatalf("win rate %.3f against a random player, want ≥ 0.85", win)
	}
	// From a position that is not a multiple of four, the winning move
	// leaves one.
	greedy := at.Actor(true)
	optimal, positions := 0, 0
	for n := 1; n <= maxSticks; n++ {
		if n%4 == 0 {
			continue
		}
		positions++
		if take(greedy.Act(observe(n)).Action, n) == n%4 {
			optimal++
		}
	}
	t.Logf("optimal moves in %d of %d winnable positions", optimal, positions)
	if optimal < positions*3/4 {
		t.Fatalf("optimal moves in only %d of %d winnable positions", optimal, positions)
	}
}
