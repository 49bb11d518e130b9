package trainer

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/remote"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// scriptedAsync is an asynchronous batch of counters whose groups come
// back in a scripted order: of the groups under way, the highest-numbered
// first, so group 0 is the slow worker. Sub-environment e at its t-th step
// (t from 0) observes (e, t mod 5), gets reward 10e + t and ends its
// episode every 5 steps, truncated for odd e, terminated for even e.
type scriptedAsync struct {
	n, size, batch int
	t              []int // steps taken per sub-environment
	underWay       []int // groups sent, in sending order
	log            []int // groups in the order they came back
	bufs           struct {
		obs, final []float32
		rew        []float64
		term, tr   []bool
	}
}

func (s *scriptedAsync) NumEnvs() int                 { return s.n }
func (s *scriptedAsync) ObservationSpace() envs.Space { return envs.Space{Kind: envs.Box, Dim: 2} }
func (s *scriptedAsync) ActionSpace() envs.Space      { return envs.Space{Kind: envs.Discrete, N: 2} }
func (s *scriptedAsync) Close() error                 { return nil }
func (s *scriptedAsync) AsyncBatch() int              { return s.batch }
func (s *scriptedAsync) GroupSize() int               { return s.size }

func (s *scriptedAsync) Reset(seed int64, obs []float32) error {
	clear(s.t)
	for e := range s.n {
		obs[2*e], obs[2*e+1] = float32(e), 0
	}
	return nil
}

func (s *scriptedAsync) Step(actions, obs, finalObs []float32, rewards []float64, term, trunc []bool) error {
	for g := range s.n / s.size {
		s.stepGroup(g, obs, finalObs, rewards, term, trunc)
	}
	return nil
}

func (s *scriptedAsync) stepGroup(g int, obs, finalObs []float32, rewards []float64, term, trunc []bool) {
	for e := g * s.size; e < (g+1)*s.size; e++ {
		t := s.t[e]
		s.t[e]++
		rewards[e] = float64(10*e + t)
		ended := (t+1)%5 == 0
		term[e], trunc[e] = ended && e%2 == 0, ended && e%2 == 1
		obs[2*e], obs[2*e+1] = float32(e), float32((t+1)%5)
		if ended {
			finalObs[2*e], finalObs[2*e+1] = float32(e), 5
			obs[2*e+1] = 0
		}
	}
}

func (s *scriptedAsync) SendGroup(g int, actions, obs, finalObs []float32, rewards []float64, term, trunc []bool) error {
	s.underWay = append(s.underWay, g)
	s.bufs.obs, s.bufs.final, s.bufs.rew, s.bufs.term, s.bufs.tr = obs, finalObs, rewards, term, trunc
	return nil
}

func (s *scriptedAsync) RecvGroup() (int, error) {
	if len(s.underWay) == 0 {
		return -1, nil
	}
	i := slices.Index(s.underWay, slices.Max(s.underWay))
	g := s.underWay[i]
	s.underWay = slices.Delete(s.underWay, i, i+1)
	s.stepGroup(g, s.bufs.obs, s.bufs.final, s.bufs.rew, s.bufs.term, s.bufs.tr)
	s.log = append(s.log, g)
	return g, nil
}

var scripted *scriptedAsync

func init() {
	envs.Register(envs.Spec{ID: "test/scripted-async", Description: "asynchronous counters for asyncrollout_test.go",
		New: func(envs.Params) (envs.Env, error) { return nil, errors.New("built as one batch") },
		NewBatch: func(n int, _ envs.Params) (*envs.Vector, error) {
			scripted = &scriptedAsync{n: n, size: 2, batch: 4, t: make([]int, n)}
			return envs.NewBatchVector(scripted)
		}})
}

// TestAsyncRolloutBookkeeping runs one asynchronous rollout over counters
// whose group 0 always comes back last: every sub-environment still takes
// num_steps steps, each observation, reward and episode end lands in the
// row of its step (t·N+e), truncated steps carry γ·V(final observation),
// and the fast groups finished all their steps before the slow one's first
// came back — the point of stepping asynchronously.
func TestAsyncRolloutBookkeeping(t *testing.T) {
	const n, steps = 8, 12
	cfg := testConfig(t, "env.id=test/scripted-async", "env.num_envs=8", "ppo.num_steps=12", "ppo.num_minibatches=2")
	tr, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	p, err := tr.begin()
	if err != nil {
		t.Fatal(err)
	}
	buf := newRollout(steps, n, 2, 1)
	samples, err := tr.rolloutAsync(buf, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != n*steps || p.step != n*steps {
		t.Fatalf("%d samples, %d steps; want %d", len(samples), p.step, n*steps)
	}
	gamma := float32(cfg.PPO.Gamma)
	for s := range steps {
		for e := range n {
			row := s*n + e
			if got := buf.obs[2*row : 2*row+2]; got[0] != float32(e) || got[1] != float32(s%5) {
				t.Fatalf("row %d (env %d step %d) holds observation %v", row, e, s, got)
			}
			ended := (s+1)%5 == 0
			if buf.dones[row] != map[bool]float32{false: 0, true: 1}[ended] {
				t.Errorf("row %d: done %v", row, buf.dones[row])
			}
			want := float32(10*e + s)
			if ended && e%2 == 1 { // truncated: bootstrapped from (e, 5)
				v := make([]float32, 1)
				tr.agent.Values([]float32{float32(e), 5}, 1, v)
				want += gamma * v[0]
			}
			if buf.rewards[row] != want {
				t.Errorf("row %d (env %d step %d): reward %v, want %v", row, e, s, buf.rewards[row], want)
			}
		}
	}
	for e, k := range scripted.t {
		if k != steps {
			t.Errorf("sub-environment %d took %d steps, want %d", e, k, steps)
		}
	}
	// Group 3 finished all 12 steps before group 0's first step came back.
	first0 := slices.Index(scripted.log, 0)
	if n3 := countOf(scripted.log[:first0], 3); n3 != steps {
		t.Errorf("group 3 came back %d times before group 0's first step (log %v), want all %d", n3, scripted.log, steps)
	}
	if tr.venv.Err() != nil {
		t.Fatal(tr.venv.Err())
	}
	if got := p.episodes.total; got != int64(n*(steps/5)) {
		t.Errorf("%d episodes, want %d", got, n*(steps/5))
	}
}

func countOf(xs []int, x int) int {
	k := 0
	for _, y := range xs {
		if y == x {
			k++
		}
	}
	return k
}

// remoteCartPole is the pure-Python CartPole server of ../remote.
func remoteCartPole(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH; the remote environment tests run ../remote/cartpole_server.py (CI installs python3)")
	}
	p, err := filepath.Abs(filepath.Join("..", "remote", "cartpole_server.py"))
	if err != nil {
		t.Fatal(err)
	}
	return `env.args.command=["python3", "` + p + `"]`
}

// TestRemoteWorkersSameMetrics trains on the Python CartPole with one
// server and with four workers: the metrics are the same, bit for bit.
func TestRemoteWorkersSameMetrics(t *testing.T) {
	server := remoteCartPole(t)
	base := []string{"env.id=remote", server, "env.num_envs=8", "ppo.num_steps=64", "ppo.total_timesteps=2048", "trainer.threads=1"}
	_, one := train(t, testConfig(t, base...), t.TempDir())
	_, four := train(t, testConfig(t, append(base, "env.args.workers=4")...), t.TempDir())
	if len(one) != 4 {
		t.Fatalf("%d records", len(one))
	}
	if a, b := stripTiming(one), stripTiming(four); a != b {
		t.Fatalf("one server and four workers trained differently:\n%s\n---\n%s", a, b)
	}
}

// TestAsyncStepsLearnCartPole trains on the Python CartPole with four
// workers stepped asynchronously, two at a time (env.args.batch_size = 4 of
// 8): the mean return of the last 100 episodes climbs from a random
// policy's 22 or so past 150, which no policy that did not learn reaches.
func TestAsyncStepsLearnCartPole(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 100k steps")
	}
	server := remoteCartPole(t)
	cfg := testConfig(t, "env.id=remote", server, "env.num_envs=8", "env.args.workers=4", "env.args.batch_size=4",
		"ppo.total_timesteps=102400", "trainer.threads=1", "trainer.seed=1")
	dir := t.TempDir()
	tr, err := New(cfg, Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := tr.venv.Batch()
	if sent := b.(*remote.WorkerPool).AsyncSteps(); sent != 102400/2 {
		t.Errorf("%d asynchronous group steps, want one per 2 sub-environment steps (%d)", sent, 102400/2)
	}
	recs := readRecords(t, filepath.Join(dir, runstore.MetricsFile))
	final := recs[len(recs)-1]["ep_return_mean"].(float64)
	first := recs[0]["ep_return_mean"].(float64)
	t.Logf("ep_return_mean %.1f after the first iteration, %.1f after %v steps", first, final, recs[len(recs)-1]["step"])
	if final < 150 {
		t.Fatalf("asynchronous stepping did not learn CartPole: ep_return_mean %.1f after 102400 steps, want ≥ 150", final)
	}
}
