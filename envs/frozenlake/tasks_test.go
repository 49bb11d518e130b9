package frozenlake

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTaskFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"jsonl", "csv"} {
		for _, slippery := range []bool{false, true} {
			var b bytes.Buffer
			if err := WriteFrozenLakeTasks(&b, format, 50, 5, 0.75, slippery, 30, 7); err != nil {
				t.Fatal(err)
			}
			path := writeFile(t, dir, "tasks."+format, b.String())
			got, err := tasks.LoadTasks(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := GenerateFrozenLakeTasks(FrozenLakeTaskOptions{N: 50, Size: 5, P: 0.75, Slippery: slippery, MaxSteps: 30, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: read back\n%v\nwant\n%v", format, got[:2], want[:2])
			}
			if err := tasks.ValidateTasks("FrozenLake-v1", got); err != nil {
				t.Fatal(err)
			}
			for i, row := range got {
				f, err := envs.Make("FrozenLake-v1", row)
				if err != nil {
					t.Fatalf("row %d: %v", i+1, err)
				}
				if f.(*FrozenLake).ShortestPath() > 30 {
					t.Fatalf("row %d cannot be solved in max_steps", i+1)
				}
			}
		}
	}
	var b bytes.Buffer
	if err := WriteFrozenLakeTasks(&b, "jsonl", 2, 4, 0.8, false, 100, 1); err != nil {
		t.Fatal(err)
	}
	want := `{"seed": 1000000000, "size": 4, "p": 0.8, "is_slippery": false, "max_steps": 100}
{"seed": 1000000001, "size": 4, "p": 0.8, "is_slippery": false, "max_steps": 100}
`
	if b.String() != want {
		t.Errorf("jsonl:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteFrozenLakeTasks(&b, "csv", 2, 4, 0.8, true, 100, -2); err != nil {
		t.Fatal(err)
	}
	want = "seed,size,p,is_slippery,max_steps\n-2000000000,4,0.8,true,100\n-1999999999,4,0.8,true,100\n"
	if b.String() != want {
		t.Errorf("csv:\n%s\nwant\n%s", b.String(), want)
	}
}

func TestGeneratedTaskSets(t *testing.T) {
	gen := func(o FrozenLakeTaskOptions) []envs.Params {
		t.Helper()
		rows, err := GenerateFrozenLakeTasks(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != o.N {
			t.Fatalf("%d rows, want %d", len(rows), o.N)
		}
		return rows
	}
	train := gen(FrozenLakeTaskOptions{N: 1000, Size: 4, P: 0.8, MaxSteps: 100, Seed: 1})
	val := gen(FrozenLakeTaskOptions{N: 200, Size: 4, P: 0.8, MaxSteps: 100, Seed: 2})
	if self, _ := SharedFrozenLakeMaps(train, train); len(self) != len(train) {
		t.Fatalf("a set shares %d of its %d maps with itself", len(self), len(train))
	}
	if self, _ := SharedFrozenLakeMaps(train[:1], train[1:]); len(self) != 0 {
		t.Fatal("a generated set repeats a map")
	}
	seeds := map[any]bool{}
	for _, r := range append(append([]envs.Params{}, train...), val...) {
		if seeds[r["seed"]] {
			t.Fatalf("map seed %v used twice", r["seed"])
		}
		seeds[r["seed"]] = true
	}
	// Different seeds never share a map seed, but small lakes can come out
	// the same; Exclude keeps a validation set clear of the training maps.
	shared, err := SharedFrozenLakeMaps(train, val)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("4×4 sets of 1000 and 200 made with seeds 1 and 2 share %d maps; with Exclude none", len(shared))
	val2 := gen(FrozenLakeTaskOptions{N: 200, Size: 4, P: 0.8, MaxSteps: 100, Seed: 2, Exclude: train})
	if shared, _ := SharedFrozenLakeMaps(train, val2); len(shared) != 0 {
		t.Errorf("validation set made with Exclude shares maps %v", shared)
	}
	// Tasks solvable within max_steps only.
	for _, r := range gen(FrozenLakeTaskOptions{N: 300, Size: 8, P: 0.7, MaxSteps: 9, Seed: 3}) {
		if f := newLake(t, r); f.ShortestPath() > 9 {
			t.Fatalf("task %v needs %d steps", r, f.ShortestPath())
		}
	}

	all2x2 := gen(FrozenLakeTaskOptions{N: 44, Size: 2, P: 0.5, MaxSteps: 10, Seed: 5}) // every 2×2 map there is
	bad := []struct {
		o    FrozenLakeTaskOptions
		want string
	}{
		{FrozenLakeTaskOptions{N: 0, Size: 4, P: 0.8, MaxSteps: 100}, "the number of tasks must be between 1 and 10000000, got 0"},
		{FrozenLakeTaskOptions{N: 5, Size: 1, P: 0.8, MaxSteps: 100}, "size must be an integer from 2 to 16 (max_size), got 1"},
		{FrozenLakeTaskOptions{N: 5, Size: 17, P: 0.8, MaxSteps: 100}, "size must be an integer from 2 to 16 (max_size), got 17"},
		{FrozenLakeTaskOptions{N: 5, Size: 4, P: 0, MaxSteps: 100}, "p must be a number in (0, 1], the probability that a tile is frozen, got 0"},
		{FrozenLakeTaskOptions{N: 5, Size: 4, P: 0.8, MaxSteps: 0}, "max_steps must be a positive integer, got 0"},
		{FrozenLakeTaskOptions{N: 5, Size: 4, P: 0.8, MaxSteps: 10, Seed: 1e10}, "seed must be between -9223372035 and 9223372035, got 10000000000"},
		{FrozenLakeTaskOptions{N: 100, Size: 2, P: 0.8, MaxSteps: 10}, "asked for 100 tasks, but a 2×2 lake has only 48 distinct maps; ask for fewer tasks or a larger lake (--size)"},
		{FrozenLakeTaskOptions{N: 46, Size: 2, P: 0.8, MaxSteps: 10}, "asked for 46 tasks, but only 44 of 3300 map seeds gave distinct 2×2 maps solvable in 10 steps; ask for fewer tasks or larger lakes"},
		{FrozenLakeTaskOptions{N: 10000000, Size: 2, P: 0.8, MaxSteps: 10}, "asked for 10000000 tasks, but a 2×2 lake has only 48 distinct maps; ask for fewer tasks or a larger lake (--size)"},
		{FrozenLakeTaskOptions{N: 1, Size: 2, P: 0.8, MaxSteps: 10, Exclude: all2x2}, "asked for 1 tasks, but only 0 of 1050 map seeds gave distinct 2×2 maps solvable in 10 steps and not among the 44 excluded tasks; ask for fewer tasks or larger lakes"},
		{FrozenLakeTaskOptions{N: 1, Size: 2, P: 0.8, MaxSteps: 10, Exclude: []envs.Params{{"size": "x"}}}, `excluded task 1: size must be an integer, got "x"`},
	}
	for _, c := range bad {
		if _, err := GenerateFrozenLakeTasks(c.o); err == nil || err.Error() != c.want {
			t.Errorf("%+v:\n got %v\nwant %s", c.o, err, c.want)
		}
	}
	var b bytes.Buffer
	if err := WriteFrozenLakeTasks(&b, "parquet", 5, 4, 0.8, false, 100, 1); err == nil || err.Error() != `unknown task file format "parquet"; use "jsonl" or "csv"` {
		t.Errorf("bad format: %v", err)
	}
}

func TestHashSet(t *testing.T) {
	s := newHashSet(1000)
	seen := map[uint64]bool{}
	x := uint64(88172645463325252)
	for i := 0; i < 1000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		h := x%700 + 2 // repeats on purpose (0 and 1 share a slot, as two maps sharing a hash do)
		if got := s.add(h); got == seen[h] {
			t.Fatalf("add(%d) = %v after %d adds", h, got, i)
		}
		seen[h] = true
	}
	if !s.add(12345678901) || s.add(12345678901) {
		t.Fatal("a new hash")
	}
}
