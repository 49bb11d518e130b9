package tasks_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	_ "github.com/agenttrainer/agenttrainer/envs/frozenlake" // registers FrozenLake-v1, the rows these tests check
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

func TestLoadTasksTypesValues(t *testing.T) {
	dir := t.TempDir()
	rows, err := tasks.LoadTasks(writeFile(t, dir, "t.csv", "\xef\xbb\xbfa, b ,c,d,e,f,g\r\n4, 0.5,TRUE,false,,hello,-3\r\n\r\n1,0,1e3,True,x,,\"4\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []envs.Params{
		{"a": int64(4), "b": 0.5, "c": true, "d": false, "f": "hello", "g": int64(-3)},
		{"a": int64(1), "b": int64(0), "c": 1000.0, "d": true, "e": "x", "g": int64(4)},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("csv: %v, want %v", rows, want)
	}
	rows, err = tasks.LoadTasks(writeFile(t, dir, "t.jsonl", "{\"a\": 4, \"b\": 4.0, \"c\": 1e3, \"d\": \"x\", \"e\": true, \"f\": null, \"g\": 99999999999999999999, \"h\": [1, 2.5]}\n\n  \n{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want = []envs.Params{
		{"a": int64(4), "b": 4.0, "c": 1000.0, "d": "x", "e": true, "f": nil, "g": 1e20, "h": []any{int64(1), 2.5}},
		{},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("jsonl: %v, want %v", rows, want)
	}
	rows, err = tasks.LoadTasks(writeFile(t, dir, "t.json", ` [{"size": 4, "p": 0.8, "seed": 1}, {"size": 5, "p": 1, "seed": 2}]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []envs.Params{{"size": int64(4), "p": 0.8, "seed": int64(1)}, {"size": int64(5), "p": int64(1), "seed": int64(2)}}; !reflect.DeepEqual(rows, want) {
		t.Errorf("json array: %v, want %v", rows, want)
	}
	if err := tasks.ValidateTasks("FrozenLake-v1", rows); err != nil {
		t.Error(err)
	}
}

// TestBadTaskFiles checks the exact message for each kind of bad task file:
// ones LoadTasks refuses, and ones whose rows ValidateTasks refuses.
func TestBadTaskFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "folder.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, text string // no text: the file is not created
		want       string // DIR stands for the directory
	}{
		{"missing.jsonl", "", "task file DIR/missing.jsonl does not exist"},
		{"folder.jsonl", "", "task file: DIR/folder.jsonl is a directory; a task file must be a regular file"},
		{"empty.jsonl", "\x00", "task file DIR/empty.jsonl is empty"},
		{"blank.csv", " \n\r\n ", "task file DIR/blank.csv is empty"},
		{"tasks.txt", "size\n4\n", `task file DIR/tasks.txt: unsupported format ".txt"; use .jsonl (JSON Lines), .csv (with a header row) or .parquet`},
		{"tasks", "size\n4\n", "task file DIR/tasks has no extension; name it .jsonl (JSON Lines), .csv (with a header row) or .parquet"},
		{"train.parquet", "PAR1", `task file DIR/train.parquet: not a Parquet file: it does not start and end with the PAR1 mark`},
		{"notjson.jsonl", "{\"size\": 4}\n{\"size\": 4}\n{size: 4}\n", "task file DIR/notjson.jsonl: line 3: not valid JSON (invalid character 's' looking for beginning of object key string at byte 2)"},
		{"trailing.jsonl", "{\"size\": 4} 5\n", "task file DIR/trailing.jsonl: line 1: not valid JSON (invalid character '5' after top-level value at byte 13)"},
		{"array.jsonl", "{\"size\": 4}\n[4, 0.8, 1]\n", `task file DIR/array.jsonl: line 2: want a JSON object like {"size": 4, "p": 0.8, "seed": 1}, got an array`},
		{"number.jsonl", "4\n", `task file DIR/number.jsonl: line 1: want a JSON object like {"size": 4, "p": 0.8, "seed": 1}, got a number`},
		{"emptyarray.json", " [ ] ", "task file DIR/emptyarray.json: the JSON array holds no tasks"},
		{"arrayitem.json", `[{"size": 4}, 5]`, `task file DIR/arrayitem.json: element 2: want a JSON object like {"size": 4, "p": 0.8, "seed": 1}, got a number`},
		{"headeronly.csv", "size,p,seed\n", "task file DIR/headeronly.csv: a header (size,p,seed) but no tasks"},
		{"ragged.csv", "size,p,seed\n4,0.8,1\n4,0.8\n", "task file DIR/ragged.csv: line 3 has 2 values, the header has 3 columns"},
		{"dupcol.csv", "size,p,size\n4,0.8,1\n", `task file DIR/dupcol.csv: line 1: header names column "size" twice (columns 1 and 3)`},
		{"noname.csv", "size,,seed\n4,0.8,1\n", "task file DIR/noname.csv: line 1: header column 2 has no name"},
		{"quote.csv", "size,p,seed\n4,0.\"8,1\n", `task file DIR/quote.csv: line 2, column 5: bare " in non-quoted-field`},

		// Files that load but whose rows are not FrozenLake tasks.
		{"wrongtype.csv", "size,p,seed\n4,0.8,1\nfour,0.8,2\n", `row 2: size must be an integer, got "four"`},
		{"wrongtype.jsonl", `{"size": 4, "p": "high", "seed": 1}`, `row 1: p must be a number, got "high"`},
		{"badbool.csv", "size,p,seed,is_slippery\n4,0.8,1,yes\n", `row 1: is_slippery must be true or false (or 1 or 0), got "yes"`},
		{"missingcol.csv", "size,p\n4,0.8\n4,0.8\n4,0.8\n4,0.8\n5,0.8\n", "row 1: missing seed (every FrozenLake-v1 task needs size, p, seed); row 2: missing seed (every FrozenLake-v1 task needs size, p, seed); row 3: missing seed (every FrozenLake-v1 task needs size, p, seed) (and 2 more bad rows; 5 of 5 in all)"},
		{"emptycell.csv", "size,p,seed\n4,0.8,1\n4,,2\n", "row 2: missing p (every FrozenLake-v1 task needs size, p, seed)"},
		{"wrongcols.csv", "width,height,holes\n4,4,3\n", "row 1: missing size, p, seed (every FrozenLake-v1 task needs size, p, seed)"},
		{"typo.jsonl", `{"size": 4, "p": 0.8, "seed": 1, "is_slipery": true}`, `row 1: unknown argument "is_slipery" (it takes size, p, seed, map, is_slippery, max_steps, max_size, obs, generator); did you mean is_slippery?`},
		{"toobig.csv", "size,p,seed\n4,0.8,1\n20,0.8,2\n", "row 2: size must be an integer from 2 to 8 (max_size), got 20"},
		{"toosmall.jsonl", `{"size": 1, "p": 0.8, "seed": 1}`, "row 1: size must be an integer from 2 to 8 (max_size), got 1"},
		{"badp.csv", "size,p,seed\n4,0,1\n4,1.2,2\n4,0.8,3\n", "row 1: p must be a number in (0, 1], the probability that a tile is frozen, got 0; row 2: p must be a number in (0, 1], the probability that a tile is frozen, got 1.2"},
		{"badsteps.csv", "size,p,seed,max_steps\n4,0.8,1,-5\n", "row 1: max_steps must be a positive integer, got -5"},
		{"mixed.jsonl", "{\"size\": 4, \"p\": 0.8, \"seed\": 1}\n{\"size\": 4, \"p\": 0.8, \"seed\": 2, \"max_size\": 4}\n", "row 2: observation Box(147) differs from row 1's Box(675) (every task must share the arguments that shape the observation)"},
		{"nulls.jsonl", `{"size": 4, "p": 0.8, "seed": null}`, "row 1: seed must be an integer, got null"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if c.text != "" && c.text != "\x00" {
			writeFile(t, dir, c.name, c.text)
		} else if c.text == "\x00" {
			writeFile(t, dir, c.name, "")
		}
		want := strings.ReplaceAll(c.want, "DIR", dir)
		rows, err := tasks.LoadTasks(path)
		if err == nil {
			err = tasks.ValidateTasks("FrozenLake-v1", rows)
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, want)
		}
	}
	if err := tasks.ValidateTasks("FrozenLake-v2", []envs.Params{{}}); err == nil || !strings.HasPrefix(err.Error(), `unknown environment "FrozenLake-v2" (registered: `) {
		t.Errorf("unknown environment: %v", err)
	}
	if err := tasks.ValidateTasks("FrozenLake-v1", nil); err == nil || err.Error() != "no tasks" {
		t.Errorf("no rows: %v", err)
	}
}
