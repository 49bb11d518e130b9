package nprand

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"
)

// TestGeneratorDrawsMatchNumPy replays Generator.integers and choice with p,
// interleaved with random(), as scripts/record-nprand.py recorded them
// (testdata/draws/generator.json): the kept half word of Uint32 and the
// rejection loops must line up with NumPy's for every later draw to match.
func TestGeneratorDrawsMatchNumPy(t *testing.T) {
	b, err := os.ReadFile("testdata/draws/generator.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Generator []struct {
			Seed string
			Ops  []struct {
				Op     string
				Low    int64
				High   string
				Value  json.RawMessage
				P      json.RawMessage
				N      int
				Values []int
			}
		}
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Generator) == 0 {
		t.Fatal("no recorded draws")
	}
	for _, c := range rec.Generator {
		t.Run("seed="+c.Seed, func(t *testing.T) {
			g := NewGenerator(dec64(t, c.Seed))
			for i, op := range c.Ops {
				var value string
				_ = json.Unmarshal(op.Value, &value)
				switch op.Op {
				case "integers":
					high := int64(dec64(t, op.High))
					want, _ := strconv.ParseInt(value, 10, 64)
					if got := g.Integers(op.Low, high); got != want {
						t.Fatalf("op %d: integers(%d, %d) = %d, NumPy gave %d", i, op.Low, high, got, want)
					}
				case "random":
					sameFloat(t, "random() at op "+strconv.Itoa(i), g.Random(), value)
				case "choice", "choice2":
					var p []float64
					if op.Op == "choice2" {
						var ps string
						_ = json.Unmarshal(op.P, &ps)
						x := hexFloat(t, ps)
						p = []float64{x, 1 - x}
					} else {
						var ps []string
						_ = json.Unmarshal(op.P, &ps)
						for _, s := range ps {
							p = append(p, hexFloat(t, s))
						}
					}
					got, err := g.ChoiceP(p, op.N)
					if err != nil {
						t.Fatalf("op %d: %v", i, err)
					}
					for k := range got {
						if got[k] != op.Values[k] {
							t.Fatalf("op %d: choice(p=%v)[%d] = %d, NumPy gave %d (all: %v vs %v)", i, p, k, got[k], op.Values[k], got, op.Values)
						}
					}
				default:
					t.Fatalf("unknown recorded op %q", op.Op)
				}
			}
		})
	}
}

func TestChoicePRefusesWhatNumPyRefuses(t *testing.T) {
	for _, tt := range []struct {
		p    []float64
		want string
	}{
		{[]float64{0.5, 0.6}, "probabilities do not sum to 1"},
		{[]float64{1.2, -0.2}, "probabilities are not non-negative"},
		{[]float64{math.NaN(), 0.5}, "probabilities contain NaN"},
		{nil, "a cannot be empty unless no samples are taken"},
	} {
		if _, err := NewGenerator(1).ChoiceP(tt.p, 3); err == nil || err.Error() != tt.want {
			t.Errorf("ChoiceP(%v): error %v, want %q", tt.p, err, tt.want)
		}
	}
	// Within √ε of 1 is accepted, as NumPy accepts it.
	if _, err := NewGenerator(1).ChoiceP([]float64{0.5, 0.5 + 1e-9}, 3); err != nil {
		t.Errorf("a sum 1e-9 off 1 was refused: %v", err)
	}
}

func TestIntegersReseedDropsTheKeptHalf(t *testing.T) {
	g := NewGenerator(9)
	g.Integers(0, 5) // keeps a half word
	g.Seed(9)
	h := NewGenerator(9)
	for i := range 20 {
		if a, b := g.Integers(0, 7), h.Integers(0, 7); a != b {
			t.Fatalf("draw %d after Seed: %d, a fresh generator gave %d", i, a, b)
		}
	}
}
