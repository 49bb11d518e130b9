// Command lm-estimators compares advantage estimators of language-model
// RL on the toy task of trainer's learning test (TestLMGRPOLearns): a
// prompt whose answer is paid the fraction of its characters that are
// vowels, a from-scratch 32-wide model, four-token answers. It trains each
// estimator with the same seeds and prints the mean reward ± sd over seeds
// by blocks of iterations, and the first iteration at which each seed's
// reward reached 0.9:
//
//	go run ./scripts/lm-estimators
//	go run ./scripts/lm-estimators -estimators grpo,gae -seeds 3 rollout.n=1 data.train_batch_size=32
//
// Arguments after the flags are config overrides for every run.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// vowels pays an answer the fraction of its characters that are vowels.
type vowels struct{}

func (vowels) Reset(envs.Params) (string, text.Info, error) { return "Say vowels.", nil, nil }

func (vowels) Step(a string) (string, float64, bool, text.Info, error) {
	n, all := 0, 0
	for _, r := range a {
		all++
		if strings.ContainsRune("aeiou", r) {
			n++
		}
	}
	if all == 0 {
		return "", 0, true, nil, nil
	}
	return "", float64(n) / float64(all), true, nil, nil
}

func main() {
	estimators := flag.String("estimators", "grpo,gae", "advantage estimators to compare, comma-separated")
	seeds := flag.Int("seeds", 3, "seeds 1..N for each estimator")
	iters := flag.Int("iters", 40, "iterations per run")
	block := flag.Int("block", 5, "iterations per row of the table")
	flag.Parse()
	if *seeds < 2 || *iters < 1 || *block < 1 {
		fmt.Fprintln(os.Stderr, "lm-estimators: -seeds must be at least 2 (for an sd), -iters and -block at least 1")
		os.Exit(2)
	}
	text.Register(text.Spec{ID: "VowelToy-v0", Description: "pays the vowels of an answer", Agent: "single_turn", MaxTurns: 1,
		Columns: []string{"id"}, New: func(envs.Params) (text.Env, error) { return vowels{}, nil }})
	names := strings.Split(*estimators, ",")
	curves := map[string][][]float64{}
	for _, est := range names {
		for seed := 1; seed <= *seeds; seed++ {
			r, err := run(est, seed, *iters, flag.Args())
			if err != nil {
				fmt.Fprintf(os.Stderr, "lm-estimators: %s, seed %d: %v\n", est, seed, err)
				os.Exit(1)
			}
			curves[est] = append(curves[est], r)
		}
	}
	what := "the script's settings"
	if flag.NArg() > 0 {
		what += ", " + strings.Join(flag.Args(), " ")
	}
	fmt.Printf("mean reward ± sd over seeds 1–%d (%s)\n\n| iterations |", *seeds, what)
	for _, est := range names {
		fmt.Printf(" %s |", est)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", len(names)))
	for a := 0; a < *iters; a += *block {
		b := min(a+*block, *iters)
		fmt.Printf("| %d–%d |", a+1, b)
		for _, est := range names {
			var per []float64
			for _, r := range curves[est] {
				per = append(per, mean(r[a:b]))
			}
			m, sd := meanSD(per)
			fmt.Printf(" %.3f ± %.3f |", m, sd)
		}
		fmt.Println()
	}
	fmt.Println()
	for _, est := range names {
		var first []string
		for _, r := range curves[est] {
			it := "never"
			for i, x := range r {
				if x >= 0.9 {
					it = fmt.Sprint(i + 1)
					break
				}
			}
			first = append(first, it)
		}
		fmt.Printf("%s: first iteration with reward ≥ 0.9, by seed: %s\n", est, strings.Join(first, ", "))
	}
}

// run trains one estimator from one seed and returns its reward by
// iteration.
func run(est string, seed, iters int, overrides []string) ([]float64, error) {
	cfg := config.Default()
	args := []string{"env.id=VowelToy-v0", "agent.name=lm", "env.args={}", "trainer.device=cpu", "trainer.threads=1",
		"agent.hidden_size=32", "agent.intermediate_size=64", "agent.num_attention_heads=2", "agent.num_key_value_heads=1", "agent.num_hidden_layers=1",
		"data.train_batch_size=4", "rollout.n=8", "data.max_response_length=4", "data.max_prompt_length=256",
		"ppo.learning_rate=1e-2", "ppo.anneal_lr=false", "actor.ppo_micro_batch_size=32", "trainer.test_freq=0",
		"trainer.log_every_steps=0", "trainer.save_interval_s=0",
		fmt.Sprintf("trainer.total_training_steps=%d", iters), fmt.Sprintf("trainer.seed=%d", seed), "algorithm.adv_estimator=" + est}
	if err := cfg.ApplyArgs(append(args, overrides...)); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lm-estimators-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	dev := gpu.NewCPU(1)
	defer dev.Close()
	tr, err := trainer.New(cfg, trainer.Options{RunDir: dir + "/run", Device: dev, TrainTasks: []envs.Params{{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}}})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	var rewards []float64
	events, stop := tr.Subscribe(1 << 14)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == trainer.EventMetrics {
				v, _ := e.Metrics.Value("reward")
				rewards = append(rewards, v)
			}
		}
	}()
	_, err = tr.Run(context.Background())
	stop()
	<-done
	if err == nil && len(rewards) != iters {
		err = fmt.Errorf("%d metrics rows of %d iterations", len(rewards), iters)
	}
	return rewards, err
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func meanSD(xs []float64) (float64, float64) {
	m := mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(xs)-1))
}
