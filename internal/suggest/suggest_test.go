package suggest

import (
	"slices"
	"testing"
)

func TestDistanceAndClosest(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"learnig_rate", "learning_rate", 1}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	cands := []string{"gamma", "gae_lambda", "clip_coef", "clip_vloss"}
	near := func(name string) []string {
		return Closest(cands, 2, func(c string) int { return Distance(name, c) })
	}
	if got := near("gama"); !slices.Equal(got, []string{"gamma"}) {
		t.Errorf("gama → %v", got)
	}
	if got := near("clip_cof"); !slices.Equal(got, []string{"clip_coef"}) {
		t.Errorf("clip_cof → %v", got)
	}
	if got := near("optimizer"); got != nil {
		t.Errorf("optimizer → %v, want nothing", got)
	}
}
