package frozenlake

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

func newLake(t testing.TB, args envs.Params) *FrozenLake {
	t.Helper()
	f, err := NewFrozenLake(args)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// bfsPath is the test's own check that G can be reached from S: it reads
// only the map's rows.
func bfsPath(rows []string) int {
	n := len(rows)
	type cell struct{ r, c int }
	dist := map[cell]int{}
	var q []cell
	for r, row := range rows {
		if c := strings.IndexByte(row, 'S'); c >= 0 {
			q = append(q, cell{r, c})
			dist[cell{r, c}] = 0
		}
	}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if rows[x.r][x.c] == 'G' {
			return dist[x]
		}
		for _, d := range []cell{{0, -1}, {1, 0}, {0, 1}, {-1, 0}} {
			y := cell{x.r + d.r, x.c + d.c}
			if y.r < 0 || y.r >= n || y.c < 0 || y.c >= n || rows[y.r][y.c] == 'H' {
				continue
			}
			if _, ok := dist[y]; !ok {
				dist[y] = dist[x] + 1
				q = append(q, y)
			}
		}
	}
	return -1
}

func TestFrozenLakeMapsAreDeterministicAndSolvable(t *testing.T) {
	for _, size := range []int{2, 3, 4, 5, 6, 8, 12, 16} {
		for _, p := range []float64{0.01, 0.3, 0.6, 0.8, 1} {
			distinct := map[string]bool{}
			for seed := int64(-3); seed < 150; seed++ {
				args := envs.Params{"size": size, "p": p, "seed": seed, "max_size": 16}
				a, b := newLake(t, args), newLake(t, args)
				if a.MapString() != b.MapString() {
					t.Fatalf("size %d p %g seed %d: two builds give %s and %s", size, p, seed, a.MapString(), b.MapString())
				}
				rows := a.Map()
				distinct[a.MapString()] = true
				if len(rows) != size {
					t.Fatalf("%d rows, want %d", len(rows), size)
				}
				all := strings.Join(rows, "")
				if len(all) != size*size || strings.Count(all, "S") != 1 || strings.Count(all, "G") != 1 ||
					strings.Trim(all, "SFHG") != "" {
					t.Fatalf("size %d p %g seed %d: bad map %v", size, p, seed, rows)
				}
				if p == 1 && strings.Contains(all, "H") {
					t.Fatalf("p=1 made a hole: %v", rows)
				}
				d := bfsPath(rows)
				if d < 1 {
					t.Fatalf("size %d p %g seed %d: no path from S to G in %v", size, p, seed, rows)
				}
				if d != a.ShortestPath() {
					t.Fatalf("size %d p %g seed %d: ShortestPath %d, BFS %d", size, p, seed, a.ShortestPath(), d)
				}
			}
			if size >= 4 && p >= 0.3 && p <= 0.8 && len(distinct) < 140 {
				t.Errorf("size %d p %g: only %d distinct maps from 153 seeds", size, p, len(distinct))
			}
		}
	}
}

// TestFrozenLakeHoleRate checks that holes come with probability about 1−p
// (the redraws for a path make them a little rarer).
func TestFrozenLakeHoleRate(t *testing.T) {
	for _, p := range []float64{0.8, 0.9} {
		holes, tiles := 0, 0
		for seed := range int64(2000) {
			all := strings.Join(newLake(t, envs.Params{"size": 8, "p": p, "seed": seed}).Map(), "")
			holes += strings.Count(all, "H")
			tiles += len(all) - 2
		}
		rate := float64(holes) / float64(tiles)
		if rate > 1-p+0.005 || rate < 1-p-0.03 {
			t.Errorf("p=%g: holes on %.4f of tiles, want about %.2f", p, rate, 1-p)
		}
	}
}

// lakeAt puts the agent on tile (r, c) of an all-frozen lake (the goal moved
// out of the way) so moves can be watched.
func lakeAt(t *testing.T, slippery bool) *FrozenLake {
	f := newLake(t, envs.Params{"size": 5, "p": 1, "seed": 1, "is_slippery": slippery, "max_steps": 1 << 30})
	for i := range f.desc {
		f.desc[i] = 'F'
	}
	f.desc[0] = 'G'
	return f
}

func TestFrozenLakeMoves(t *testing.T) {
	f := lakeAt(t, false)
	obs := make([]float32, f.ObservationSpace().Dim)
	cases := []struct {
		from   [2]int
		action float32
		to     [2]int
	}{
		{[2]int{2, 2}, 0, [2]int{2, 1}}, // left
		{[2]int{2, 2}, 1, [2]int{3, 2}}, // down
		{[2]int{2, 2}, 2, [2]int{2, 3}}, // right
		{[2]int{2, 2}, 3, [2]int{1, 2}}, // up
		{[2]int{2, 0}, 0, [2]int{2, 0}}, // the edge stops the agent
		{[2]int{4, 3}, 1, [2]int{4, 3}},
		{[2]int{3, 4}, 2, [2]int{3, 4}},
		{[2]int{0, 3}, 3, [2]int{0, 3}},
		{[2]int{2, 2}, 7, [2]int{1, 2}},   // beyond the last action: clamped to 3 (up)
		{[2]int{2, 2}, -1, [2]int{2, 1}},  // negative: 0 (left)
		{[2]int{2, 2}, 1.4, [2]int{3, 2}}, // rounded
	}
	for _, c := range cases {
		f.Reset(0, obs)
		f.pos = c.from[0]*5 + c.from[1]
		r, term, trunc := f.Step([]float32{c.action}, obs)
		if got := [2]int{f.pos / 5, f.pos % 5}; got != c.to || r != 0 || term || trunc {
			t.Errorf("action %v from %v: at %v, reward %v, term %v, trunc %v; want %v", c.action, c.from, got, r, term, trunc, c.to)
		}
	}
}

// TestFrozenLakeSlipFrequencies checks Gymnasium's slippery rule: the
// intended way and each perpendicular way a third of the time each, never
// backwards.
func TestFrozenLakeSlipFrequencies(t *testing.T) {
	f := lakeAt(t, true)
	obs := make([]float32, f.ObservationSpace().Dim)
	f.Reset(7, obs)
	const draws = 30000
	for a := range 4 {
		var count [4]int
		for range draws {
			f.pos = 2*5 + 2
			f.Step([]float32{float32(a)}, obs)
			switch f.pos {
			case 2*5 + 1:
				count[flLeft]++
			case 3*5 + 2:
				count[flDown]++
			case 2*5 + 3:
				count[flRight]++
			case 1*5 + 2:
				count[flUp]++
			default:
				t.Fatalf("moved to tile %d", f.pos)
			}
		}
		for d, n := range count {
			want := 1.0 / 3
			if d == (a+2)%4 {
				want = 0
			}
			if got := float64(n) / draws; math.Abs(got-want) > 0.012 {
				t.Errorf("action %s: went %s %.4f of the time, want %.4f", flActionNames[a], flActionNames[d], got, want)
			}
		}
	}
}

func TestFrozenLakeEpisodes(t *testing.T) {
	// The map of seed 0: S at (2,1), G at (3,0), a hole right of S.
	e, err := envs.Make("FrozenLake-v1", envs.Params{"seed": 0})
	if err != nil {
		t.Fatal(err)
	}
	f := e.(*FrozenLake)
	if got, want := f.MapString(), "FFFF/HFFF/FSHH/GFFF"; got != want {
		t.Fatalf("seed 0's map %s, want %s", got, want)
	}
	obs := make([]float32, 675)
	step := func(a float32) (float64, bool, bool) { return e.Step([]float32{a}, obs) }

	e.Reset(1, obs)
	if r, term, trunc := step(flDown); r != 0 || term || trunc || f.Succeeded() {
		t.Fatalf("first step: %v %v %v", r, term, trunc)
	}
	if r, term, trunc := step(flLeft); r != 1 || !term || trunc || !f.Succeeded() {
		t.Fatalf("onto the goal: reward %v, term %v, trunc %v, success %v", r, term, trunc, f.Succeeded())
	}
	if r, term, _ := step(flRight); r != 0 || !term || f.pos != 12 {
		t.Fatalf("after the goal: reward %v, term %v, at %d", r, term, f.pos)
	}

	e.Reset(envs.NoSeed, obs)
	if f.Succeeded() || f.pos != 9 {
		t.Fatal("Reset did not bring the agent back to S")
	}
	if r, term, trunc := step(flRight); r != 0 || !term || trunc || f.Succeeded() {
		t.Fatalf("into the hole: reward %v, term %v, trunc %v, success %v", r, term, trunc, f.Succeeded())
	}

	// Truncation at the task's max_steps.
	g := newLake(t, envs.Params{"max_steps": 3})
	g.Reset(1, obs)
	for i := 1; i <= 3; i++ {
		_, term, trunc := g.Step([]float32{flUp}, obs)
		if term || trunc != (i == 3) {
			t.Fatalf("step %d of 3: term %v trunc %v", i, term, trunc)
		}
	}
	if spec, _ := envs.Lookup("FrozenLake-v1"); spec.MaxEpisodeSteps != 0 {
		t.Error("the step limit belongs to the task, not the spec")
	}
}

func TestFrozenLakeObservation(t *testing.T) {
	for _, mode := range []string{"egocentric", "grid"} {
		for _, maxSize := range []int{4, 8} {
			m := maxSize
			want := 3 * (2*m - 1) * (2*m - 1)
			if mode == "grid" {
				want = 4 * m * m
			}
			for size := 2; size <= maxSize; size++ {
				for seed := range int64(20) {
					f := newLake(t, envs.Params{"size": size, "seed": seed, "max_size": maxSize, "obs": mode, "p": 0.7})
					sp := f.ObservationSpace()
					if sp.Kind != envs.Box || sp.Dim != want || len(sp.Low) != want || len(sp.High) != want {
						t.Fatalf("%s max_size %d size %d: space %v, want Box(%d)", mode, maxSize, size, sp, want)
					}
					obs := make([]float32, want)
					for i := range obs {
						obs[i] = 9 // Reset must overwrite everything
					}
					f.Reset(seed, obs)
					r := rand.New(rand.NewPCG(uint64(seed), 3))
					for k := 0; k < 30; k++ {
						checkLakeObs(t, f, mode, obs)
						if _, term, _ := f.Step([]float32{float32(r.IntN(4))}, obs); term {
							checkLakeObs(t, f, mode, obs)
							f.Reset(envs.NoSeed, obs)
						}
					}
				}
			}
		}
	}
}

// checkLakeObs decodes obs tile by tile from the map and the agent's place.
func checkLakeObs(t *testing.T, f *FrozenLake, mode string, obs []float32) {
	t.Helper()
	n, m := f.cfg.size, f.cfg.maxSize
	rows := f.Map()
	ar, ac := f.pos/n, f.pos%n
	tile := func(r, c int) byte {
		if r < 0 || r >= n || c < 0 || c >= n {
			return 0
		}
		return rows[r][c]
	}
	var want []float32
	if mode == "grid" {
		want = make([]float32, 4*m*m)
		for r := range m {
			for c := range m {
				i := r*m + c
				switch tile(r, c) {
				case 'S', 'F':
					want[i] = 1
				case 'H':
					want[m*m+i] = 1
				case 'G':
					want[2*m*m+i] = 1
				}
				if r == ar && c == ac {
					want[3*m*m+i] = 1
				}
			}
		}
	} else {
		w := 2*m - 1
		want = make([]float32, 3*w*w)
		for i := range w {
			for j := range w {
				k := i*w + j
				switch tile(ar+i-(m-1), ac+j-(m-1)) {
				case 0:
					want[2*w*w+k] = 1
				case 'H':
					want[k] = 1
				case 'G':
					want[w*w+k] = 1
				}
			}
		}
	}
	for i := range want {
		if obs[i] != want[i] {
			t.Fatalf("%s observation of %s with the agent at (%d,%d): element %d is %v, want %v", mode, f.MapString(), ar, ac, i, obs[i], want[i])
		}
	}
}

func TestFrozenLakeArgs(t *testing.T) {
	ok := []envs.Params{
		nil, {}, {"size": int64(8), "p": 1, "seed": -5, "is_slippery": true, "max_steps": 1},
		{"size": 4.0, "p": int64(1), "seed": 3.0, "is_slippery": int64(0)},
		{"size": 16, "max_size": 16}, {"uid": "x", "index": 3, "question": "q", "obs": "grid"},
	}
	for _, args := range ok {
		if _, err := envs.Make("FrozenLake-v1", args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	bad := []struct {
		args envs.Params
		want string
	}{
		{envs.Params{"size": "four"}, `size must be an integer, got "four"`},
		{envs.Params{"size": 4.5}, `size must be an integer, got 4.5`},
		{envs.Params{"size": 1}, `size must be an integer from 2 to 8 (max_size), got 1`},
		{envs.Params{"size": 9}, `size must be an integer from 2 to 8 (max_size), got 9`},
		{envs.Params{"size": 12, "max_size": 10}, `size must be an integer from 2 to 10 (max_size), got 12`},
		{envs.Params{"max_size": 17}, `max_size must be an integer from 2 to 16, got 17`},
		{envs.Params{"p": 0}, `p must be a number in (0, 1], the probability that a tile is frozen, got 0`},
		{envs.Params{"p": 1.5}, `p must be a number in (0, 1], the probability that a tile is frozen, got 1.5`},
		{envs.Params{"p": math.NaN()}, `p must be a number in (0, 1], the probability that a tile is frozen, got NaN`},
		{envs.Params{"p": "0.8"}, `p must be a number, got "0.8"`},
		{envs.Params{"seed": 1.5}, `seed must be an integer, got 1.5`},
		{envs.Params{"seed": nil}, `seed must be an integer, got null`},
		{envs.Params{"is_slippery": "yes"}, `is_slippery must be true or false (or 1 or 0), got "yes"`},
		{envs.Params{"is_slippery": int64(2)}, `is_slippery must be true or false (or 1 or 0), got 2`},
		{envs.Params{"max_steps": 0}, `max_steps must be a positive integer, got 0`},
		{envs.Params{"max_steps": []any{1}}, `max_steps must be an integer, got a list`},
		{envs.Params{"obs": "pixels"}, `obs must be "egocentric" or "grid", got "pixels"`},
		{envs.Params{"obs": 1}, `obs must be a string, got 1`},
		{envs.Params{"slippery": true}, `unknown argument "slippery" (it takes size, p, seed, map, is_slippery, max_steps, max_size, obs, generator)`},
		{envs.Params{"b": 1, "a": 2, "size": 4}, `unknown arguments "a", "b" (it takes size, p, seed, map, is_slippery, max_steps, max_size, obs, generator)`},
	}
	for _, c := range bad {
		_, err := envs.Make("FrozenLake-v1", c.args)
		if err == nil || err.Error() != "FrozenLake-v1: "+c.want {
			t.Errorf("%v: error %v, want %q", c.args, err, "FrozenLake-v1: "+c.want)
		}
	}
}

// TestFrozenLakeSnapshotSlippery saves a slippery lake mid-episode and
// checks the restored copy takes the same slides; a snapshot of another
// map is refused.
func TestFrozenLakeSnapshotSlippery(t *testing.T) {
	args := envs.Params{"size": 8, "p": 0.9, "seed": 4, "is_slippery": true}
	a, b := newLake(t, args), newLake(t, args)
	obsA, obsB := make([]float32, 675), make([]float32, 675)
	a.Reset(9, obsA)
	r := rand.New(rand.NewPCG(1, 1))
	act := []float32{0}
	for range 57 {
		act[0] = float32(r.IntN(4))
		if _, term, trunc := a.Step(act, obsA); term || trunc {
			a.Reset(envs.NoSeed, obsA)
		}
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if a.Render() != b.Render() {
		t.Fatalf("restored picture differs:\n%s\n%s", a.Render(), b.Render())
	}
	for i := range 500 {
		act[0] = float32(r.IntN(4))
		ra, ta, ua := a.Step(act, obsA)
		rb, tb, ub := b.Step(act, obsB)
		if ra != rb || ta != tb || ua != ub || a.pos != b.pos || a.moved != b.moved {
			t.Fatalf("step %d after restore differs", i)
		}
		if ta || ua {
			a.Reset(envs.NoSeed, obsA)
			b.Reset(envs.NoSeed, obsB)
		}
	}
	other := newLake(t, envs.Params{"size": 8, "p": 0.9, "seed": 5})
	if err := other.Restore(snap); err == nil || !strings.Contains(err.Error(), "snapshot is of map") {
		t.Errorf("restore onto another map: %v", err)
	}
	for _, bad := range []string{"", "{", `{"map":"` + a.MapString() + `","pos":64}`, `{"map":"` + a.MapString() + `","rng":"AAAA"}`} {
		if err := b.Restore([]byte(bad)); err == nil {
			t.Errorf("snapshot %q accepted", bad)
		}
	}
}

func TestFrozenLakeStepDoesNotAllocate(t *testing.T) {
	for _, args := range []envs.Params{{"is_slippery": true}, {"obs": "grid", "is_slippery": true}} {
		e, err := envs.Make("FrozenLake-v1", args)
		if err != nil {
			t.Fatal(err)
		}
		obs := make([]float32, e.ObservationSpace().Dim)
		act := []float32{0}
		e.Reset(1, obs)
		i := 0
		if n := testing.AllocsPerRun(1000, func() {
			i++
			act[0] = float32(i % 4)
			if _, term, trunc := e.Step(act, obs); term || trunc {
				e.Reset(envs.NoSeed, obs)
			}
		}); n != 0 {
			t.Errorf("%v: Step allocates %v times", args, n)
		}
	}
}

// TestRandomAgentOnFrozenLake measures a uniformly random agent on 1,000
// generated 4×4, non-slippery, p=0.8 lakes with 100 steps: the baseline the
// trained policy's success rate is read against.
func TestRandomAgentOnFrozenLake(t *testing.T) {
	rows, err := GenerateFrozenLakeTasks(FrozenLakeTaskOptions{N: 1000, Size: 4, P: 0.8, MaxSteps: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2024, 1))
	obs := make([]float32, 675)
	act := []float32{0}
	// One episode per map (as a validation pass over the set would run),
	// then ten per map for a closer figure.
	rate := func(episodes int) float64 {
		wins, total := 0, 0
		for _, row := range rows {
			f := newLake(t, row)
			f.Reset(1, obs)
			for range episodes {
				for {
					act[0] = float32(r.IntN(4))
					reward, term, trunc := f.Step(act, obs)
					if term || trunc {
						if f.Succeeded() != (reward == 1) {
							t.Fatal("Succeeded disagrees with the reward")
						}
						if f.Succeeded() {
							wins++
						}
						total++
						break
					}
				}
				f.Reset(envs.NoSeed, obs)
			}
		}
		return float64(wins) / float64(total)
	}
	one, ten := rate(1), rate(10)
	t.Logf("random agent on 1000 4×4 maps (p=0.8, not slippery, max_steps 100): success rate %.3f (one episode per map), %.3f (ten per map)", one, ten)
	if one < 0.25 || one > 0.45 || ten < 0.3 || ten > 0.4 {
		t.Errorf("random success rates %.3f and %.3f are far from the 0.35 measured when this test was written", one, ten)
	}
}

func BenchmarkFrozenLakeStep(b *testing.B) {
	for _, mode := range []string{"egocentric", "grid"} {
		b.Run(mode, func(b *testing.B) {
			f := newLake(b, envs.Params{"obs": mode, "is_slippery": true})
			obs := make([]float32, f.ObservationSpace().Dim)
			act := []float32{0}
			f.Reset(1, obs)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				act[0] = float32(i % 4)
				if _, term, trunc := f.Step(act, obs); term || trunc {
					f.Reset(envs.NoSeed, obs)
				}
			}
		})
	}
}

// TestFrozenLakeRenderStatus checks the status line under the picture: the
// move, a slide, and how the episode ended.
func TestFrozenLakeRenderStatus(t *testing.T) {
	f := newLake(t, envs.Params{"seed": 0}) // FFFF/HFFF/FSHH/GFFF, S at (2,1)
	obs := make([]float32, 675)
	last := func() string {
		lines := strings.Split(f.Render(), "\n")
		return lines[len(lines)-1]
	}
	f.Reset(1, obs)
	if got := last(); got != "step 0/100" {
		t.Errorf("after reset: %q", got)
	}
	f.Step([]float32{flDown}, obs)
	f.Step([]float32{flLeft}, obs)
	if got := last(); got != "step 2/100, went left: reached the goal" {
		t.Errorf("at the goal: %q", got)
	}
	f.Reset(envs.NoSeed, obs)
	f.Step([]float32{flRight}, obs)
	if got := last(); got != "step 1/100, went right: fell in a hole" {
		t.Errorf("in the hole: %q", got)
	}

	g := newLake(t, envs.Params{"is_slippery": true, "max_steps": 1, "p": 1, "seed": 3})
	slid := false
	for seed := range int64(50) {
		g.Reset(seed, obs)
		g.Step([]float32{flUp}, obs)
		if g.moved == flUp || g.done {
			continue
		}
		want := "step 1/1, went " + flActionNames[g.moved] + " (slid; chose up): out of steps"
		if got := strings.Split(g.Render(), "\n")[4]; got != want {
			t.Errorf("slide: %q, want %q", got, want)
		}
		slid = true
		break
	}
	if !slid {
		t.Error("no slide in 50 tries")
	}
}

// Without arguments FrozenLake-v1 is Gymnasium's: the 4×4 lake, the goal
// six steps away; "map" gives any lake, checked.
func TestFrozenLakeMaps(t *testing.T) {
	tests := []struct {
		args     envs.Params
		want     string // the map, or the error
		shortest int
	}{
		{nil, "SFFF/FHFH/FFFH/HFFG", 6},
		{envs.Params{"is_slippery": true}, "SFFF/FHFH/FFFH/HFFG", 6},
		{envs.Params{"map": "8x8"}, "SFFFFFFF/FFFFFFFF/FFFHFFFF/FFFFFHFF/FFFHFFFF/FHHFFFHF/FHFFHFHF/FFFHFFFG", 14},
		{envs.Params{"map": "SFH/FFH/HFG"}, "SFH/FFH/HFG", 4},
		{envs.Params{"map": "SF,FG"}, "SF/FG", 2},
		{envs.Params{"map": "SFH/FFH"}, "row 1 has 3 tiles, the lake is 2×2", 0},
		{envs.Params{"map": "SH/HG"}, "the goal cannot be reached", 0},
		{envs.Params{"map": "SX/FG"}, "tiles are S (start)", 0},
		{envs.Params{"map": "SF/FF"}, "exactly one S and one G", 0},
		{envs.Params{"map": "4x4", "seed": 3}, "goes without size, p and seed", 0},
		{envs.Params{"map": "16x16"}, "want 2 to 8 (max_size) rows", 0},
	}
	for _, tt := range tests {
		e, err := envs.Make("FrozenLake-v1", tt.args)
		if tt.shortest == 0 {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		f := e.(*FrozenLake)
		if f.MapString() != tt.want || f.ShortestPath() != tt.shortest {
			t.Errorf("%v: map %s (shortest %d), want %s (%d)", tt.args, f.MapString(), f.ShortestPath(), tt.want, tt.shortest)
		}
	}
}
