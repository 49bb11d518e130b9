package arith

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

func TestProblems(t *testing.T) {
	for _, tt := range []struct {
		row      envs.Params
		question string
		answer   string
	}{
		{envs.Params{"a": 123, "b": 456}, "123+456=", "579"},
		{envs.Params{"a": 999, "b": 1, "op": "+"}, "999+1=", "1000"},
		{envs.Params{"a": 5, "b": 12, "op": "-"}, "5-12=", "-7"},
		{envs.Params{"a": 999999999999999999, "b": 999999999999999999, "op": "*"}, "999999999999999999*999999999999999999=", "999999999999999998000000000000000001"},
	} {
		e, err := text.Make(ID, tt.row, nil)
		if err != nil {
			t.Fatal(err)
		}
		q, _, _ := e.Reset(nil)
		if q != tt.question {
			t.Errorf("question %q, want %q", q, tt.question)
		}
		_, r, done, _, _ := e.Step(" " + tt.answer + "\n")
		if r != 1 || !done || !e.(text.Succeeder).Succeeded() {
			t.Errorf("%s %s: reward %v", q, tt.answer, r)
		}
		e.Reset(nil)
		if _, r, _, _, _ := e.Step(tt.answer + "0"); r != 0 {
			t.Errorf("a wrong answer paid %v", r)
		}
	}
	for _, tt := range []struct {
		row  envs.Params
		want string
	}{
		{envs.Params{"a": 1}, "b is missing"},
		{envs.Params{"a": 1, "b": 2, "op": "/"}, `op must be "+", "-" or "*"`},
		{envs.Params{"a": int64(1e18), "b": 2}, "at most 18 digits"},
		{envs.Params{"a": "12", "b": 2}, "a must be an integer"},
		{envs.Params{"a": 1.5, "b": 2}, "a must be an integer"},
	} {
		if _, err := text.Make(ID, tt.row, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.row, err, tt.want)
		}
	}
}

func TestGenerateCurriculum(t *testing.T) {
	rows, err := Generate(text.GenerateOptions{N: 2000, Seed: 3, Args: envs.Params{"digits": 3, "min_digits": 1, "ops": "+-"}})
	if err != nil {
		t.Fatal(err)
	}
	widths := map[int64]int{}
	keys := map[string]bool{}
	for _, row := range rows {
		d := row["digits"].(int64)
		widths[d]++
		for _, k := range []string{"a", "b"} {
			if n := len(strings.TrimPrefix(envsInt(row[k]), "-")); int64(n) != d {
				t.Fatalf("%v: operand of %d digits in a %d-digit problem", row, n, d)
			}
		}
		k, _ := Key(row)
		if keys[k] {
			t.Fatalf("duplicate %s", k)
		}
		keys[k] = true
	}
	if len(widths) != 3 || widths[1] == 0 {
		t.Fatalf("widths %v", widths)
	}
	val, err := Generate(text.GenerateOptions{N: 500, Seed: 4, Args: envs.Params{"digits": 3}, Exclude: keys})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range val {
		if k, _ := Key(row); keys[k] {
			t.Fatalf("%s is in both sets", k)
		}
	}
	if _, err := Generate(text.GenerateOptions{N: 200, Args: envs.Params{"digits": 1}}); err == nil {
		t.Error("200 distinct one-digit sums (there are 100) were made")
	}
	if _, err := Generate(text.GenerateOptions{N: 5, Args: envs.Params{"digits": 3, "ops": "/"}}); err == nil {
		t.Error("ops / was accepted")
	}
}

func envsInt(v any) string {
	n, _ := envs.Params{"x": v}.Int("x", 0)
	return strconv.FormatInt(n, 10)
}
