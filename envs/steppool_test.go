package envs

import "testing"

// TestStepPoolMode: a cheap world is stepped one after the other and timed
// only now and then; a costly one in parallel while that measured faster,
// with the other mode probed every probeEvery steps.
func TestStepPoolMode(t *testing.T) {
	cheap, costly := float64(minParallelCost)/10, 4*float64(minParallelCost)
	for _, c := range []struct {
		name            string
		seq, par        float64
		tick            int
		parallel, timed bool
	}{
		{"first step", 0, 0, 0, false, true},
		{"cheap", cheap, 0, 4, false, false},
		{"cheap, probe", cheap, 0, probeEvery - 1, false, true},
		{"costly, parallel untried", costly, 0, 4, true, true},
		{"costly, parallel faster", costly, costly / 2, 4, true, true},
		{"costly, parallel slower", costly, 2 * costly, 4, false, false},
		{"costly, parallel slower, probe", costly, 2 * costly, probeEvery - 1, true, true},
		{"costly, parallel faster, probe", costly, costly / 2, probeEvery - 1, false, true},
	} {
		p := &stepPool{seqCost: c.seq, parCost: c.par, tick: c.tick}
		if par, timed := p.mode(); par != c.parallel || timed != c.timed {
			t.Errorf("%s: parallel %v timed %v, want %v %v", c.name, par, timed, c.parallel, c.timed)
		}
	}
}
