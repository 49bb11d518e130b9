package progress

import (
	"fmt"
	"math"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// The progress line reads its columns from the metric registry and looks
// as it did when they were written out here.
func TestLine(t *testing.T) {
	nan := trainer.Float(math.NaN())
	m := trainer.Metrics{Step: 51200, SPS: 123456.7, EpReturnMean: 187.25, PolicyLoss: -0.0123, ValueLoss: nan, Entropy: 0.6789, ApproxKL: 0.00042}
	want := fmt.Sprintf("step %9d/%d %3.0f%% | %8s steps/s | ep_return_mean %8s | policy_loss %7s value_loss %8s entropy %6s approx_kl %7s",
		51200, 500000, 100*51200/500000.0, "123,457", "187.2", "-0.0123", "-", "0.6789", "4.20e-04")
	if got := Line(m, 500000); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	m.Set("env/score", 2.5)
	if got := Line(m, 500000); got != want+" | env/score 2.5" {
		t.Errorf("with a reported figure: %q", got)
	}
}

// Speeds keep the digits that matter: a language model's run does a
// fraction of a step a second.
func TestRate(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{123456.7, "123,457"}, {100, "100"}, {42.37, "42.4"}, {2.345, "2.3"}, {0.1337, "0.13"}, {0, "0"},
	} {
		if got := Rate(tt.v); got != tt.want {
			t.Errorf("Rate(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
