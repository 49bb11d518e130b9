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

func TestNamesAndDidYouMean(t *testing.T) {
	envIDs := []string{"CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"}
	tests := []struct {
		name    string
		options []string
		want    string
	}{
		{"cartpole-v1", envIDs, "; did you mean CartPole-v1?"},
		{"CartPole-v2", envIDs, "; did you mean CartPole-v1?"},
		{"Pendulm-v1", envIDs, "; did you mean Pendulum-v1?"},
		{"Breakout-v5", envIDs, ""},
		{"comand", []string{"command", "address", "dir", "env", "options"}, "; did you mean command?"},
		{"en", []string{"command", "address", "dir", "env", "options"}, "; did you mean env?"},
		{"mpl", []string{"mlp", "random"}, "; did you mean mlp?"},
		{"ab", []string{"ax", "ay", "az"}, "; did you mean ax or ay?"}, // two at most
	}
	for _, tt := range tests {
		if got := DidYouMean(Names(tt.name, tt.options)); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
