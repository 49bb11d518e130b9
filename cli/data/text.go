package data

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs"
	_ "github.com/agenttrainer/agenttrainer/envs/builtin" // the text worlds
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// TextOptions are `data tasks` and `data demos`' flags.
type TextOptions struct {
	Demos     bool // data demos: transcripts instead of task rows
	Env       string
	N         int
	Seed      int64
	Args      envs.Params // --arg k=v: the task set's shape
	Agent     string      // --agent NAME ("": the environment's own)
	AgentArgs envs.Params // --agent-arg k=v
	Tasks     string      // data demos: the task file to demonstrate
	Exclude   string
	Out       string
	// Think rewrites each demonstrated answer with a scratchpad before it
	// ("": none; "reversed-digits": see thinkReversed).
	Think string
}

// kvFlag collects repeated key=value flags, values typed as a task file's
// CSV cells are (integers, floats, true/false, else strings).
type kvFlag struct{ p envs.Params }

func (k *kvFlag) String() string { return "" }

func (k *kvFlag) Set(s string) error {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	row, err := tasks.ParseTasks([]byte("x\n"+val+"\n"), ".csv")
	if err != nil || len(row) != 1 {
		k.p[key] = val
		return nil
	}
	k.p[key] = row[0]["x"]
	return nil
}

func textIDs() string { return strings.Join(text.IDs(), ", ") }

// parseText reads `data tasks` and `data demos`.
func parseText(args []string) (Options, error) {
	o := TextOptions{Demos: args[0] == "demos", Args: envs.Params{}, AgentArgs: envs.Params{}}
	var fs *cmdutil.Flags
	if o.Demos {
		fs = cmdutil.NewFlags("data demos", "--env ID --tasks FILE --out FILE.jsonl [--agent NAME] [--agent-arg k=v ...]",
			"write demonstrations: each task played with its best answers through the agent a training run uses, one chat transcript (JSON) per line, for supervised warm start")
		fs.StringVar(&o.Tasks, "tasks", "", "task `file` to demonstrate (.jsonl, .csv or .parquet)")
		fs.StringVar(&o.Agent, "agent", "", "the text `agent` that plays (as workflow.agent; default: the environment's own)")
		fs.Var(&kvFlag{o.AgentArgs}, "agent-arg", "the text agent's argument `key=value` (repeatable), as workflow.agent_args")
		fs.StringVar(&o.Think, "think", "", "scratchpad before each answer (single-turn tasks, whose agent grades what follows </think>): padded-digits writes a numeric answer with leading zeros to the set's widest answer in a <think> block, then the answer; reversed-digits writes its digits last-first; coords (FrozenLake) writes where P and G stand before each move, as P34G32; coords-neighbours adds the tiles left, right, above and below P (# off the lake), as P34G32G#O_")
	} else {
		fs = cmdutil.NewFlags("data tasks", "--env ID --n N --seed SEED --out FILE [--arg k=v ...] [--exclude FILE]",
			"write a file of generated tasks for a text environment, none of them in --exclude (make a validation set apart from its training set)")
		fs.IntVar(&o.N, "n", 1000, "number of tasks (distinct)")
		fs.Int64Var(&o.Seed, "seed", 1, "seed of the task set; different seeds give different sets")
		fs.Var(&kvFlag{o.Args}, "arg", "a shape of the set as `key=value` (repeatable): TextFrozenLake-v0 size, p, is_slippery, max_steps; Arithmetic-v0 digits, min_digits, ops; Countdown-v0 count, max_num, max_target")
		fs.StringVar(&o.Exclude, "exclude", "", "task `file` whose tasks must not appear")
	}
	fs.StringVar(&o.Env, "env", "", "text environment: "+textIDs())
	fs.StringVar(&o.Out, "out", "", "`file` to write")
	rest, err := fs.ParseArgs(args[1:])
	if err != nil {
		return Options{}, err
	}
	if len(rest) > 0 || o.Out == "" || o.Env == "" || (o.Demos && o.Tasks == "") {
		need := "--env ID and --out FILE"
		if o.Demos {
			need = "--env ID, --tasks FILE and --out FILE"
		}
		return Options{}, cmdutil.Usagef("data %s needs %s (and takes no other arguments)", args[0], need)
	}
	spec, ok := text.Lookup(o.Env)
	if !ok {
		return Options{}, cmdutil.Usagef("--env %q is not a text environment (%s)", o.Env, textIDs())
	}
	switch {
	case o.Think != "" && scratchpadAgent[o.Think] == "":
		return Options{}, cmdutil.Usagef("--think %q: the scratchpads known are padded-digits, reversed-digits (numeric answers), coords and coords-neighbours (FrozenLake)", o.Think)
	case o.Think != "" && spec.Agent != scratchpadAgent[o.Think]:
		return Options{}, cmdutil.Usagef("--think %s needs %s; %s's agent is %s", o.Think, scratchpadNeed[scratchpadAgent[o.Think]], o.Env, spec.Agent)
	}
	ext := filepath.Ext(o.Out)
	switch {
	case o.Demos && ext != ".jsonl":
		return Options{}, cmdutil.Usagef("%s: demonstrations are JSON Lines; name the file .jsonl", o.Out)
	case !o.Demos && ext != ".jsonl" && ext != ".csv":
		return Options{}, cmdutil.Usagef("%s: name the file .jsonl or .csv to choose its format", o.Out)
	case !o.Demos && spec.Generate == nil:
		return Options{}, cmdutil.Usagef("%s makes no tasks of its own (it reads a dataset); `data tasks` works for the environments that do", o.Env)
	}
	return Options{Text: &o}, nil
}

// runText writes generated tasks or demonstrations.
func runText(_ context.Context, o TextOptions, stdout io.Writer) error {
	spec, _ := text.Lookup(o.Env)
	if o.Demos {
		rows, err := tasks.LoadTasks(o.Tasks)
		if err != nil {
			return cmdutil.Configf("--tasks: %v", err)
		}
		demos := make([]textrl.Transcript, len(rows))
		for i, row := range rows {
			if demos[i], err = textrl.Demonstrate(textrl.MultiTurnOptions{Env: o.Env, Agent: o.Agent, AgentArgs: o.AgentArgs, MaxTurns: 1 << 10}, row); err != nil {
				return cmdutil.Configf("%s, task %d: %v", o.Tasks, i+1, err)
			}
		}
		// One line a turn where the turns' prompts do not extend each other
		// (an agent that keeps only the latest observation); the scratchpad
		// goes into the lines as written.
		var lines []textrl.Transcript
		for _, tr := range demos {
			lines = append(lines, tr.PerTurn()...)
		}
		if o.Think != "" {
			if err := think(o.Think, lines); err != nil {
				return cmdutil.Configf("%s, %v", o.Tasks, err)
			}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for _, t := range lines {
			if err := enc.Encode(t); err != nil {
				return err
			}
		}
		if err := atomicfile.Write(o.Out, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d %s demonstrations to %s\n", len(rows), o.Env, o.Out)
		return nil
	}
	gen := text.GenerateOptions{N: o.N, Seed: o.Seed, Args: o.Args, Exclude: map[string]bool{}}
	if o.Exclude != "" {
		rows, err := tasks.LoadTasks(o.Exclude)
		if err != nil {
			return cmdutil.Configf("--exclude: %v", err)
		}
		for i, row := range rows {
			key, err := spec.Key(row)
			if err != nil {
				return cmdutil.Configf("--exclude %s, task %d: %v", o.Exclude, i+1, err)
			}
			gen.Exclude[key] = true
		}
	}
	rows, err := spec.Generate(gen)
	if err != nil {
		return &cmdutil.ConfigError{Err: err}
	}
	var buf bytes.Buffer
	format := strings.TrimPrefix(filepath.Ext(o.Out), ".")
	if format == "csv" {
		for _, c := range spec.Columns {
			switch rows[0][c].(type) {
			case []any, map[string]any:
				return cmdutil.Configf("%s rows hold a list (%s), which a CSV cell cannot; name the file .jsonl", o.Env, c)
			}
		}
	}
	if err := tasks.WriteTasks(&buf, format, spec.Columns, rows); err != nil {
		return err
	}
	if err := atomicfile.Write(o.Out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d %s tasks to %s\n", len(rows), o.Env, o.Out)
	return nil
}

// scratchpadAgent is the agent each scratchpad's demonstrations must be
// played by: single_turn grades what follows </think>; FrozenLake's reads
// the move from the last ``` ``` block and shows the grid the coordinates
// are read from.
var scratchpadAgent = map[string]string{"padded-digits": "single_turn", "reversed-digits": "single_turn", "coords": "frozenlake", "coords-neighbours": "frozenlake"}

var scratchpadNeed = map[string]string{"single_turn": "a single-turn task (its agent reads the answer after </think>)",
	"frozenlake": "a FrozenLake task (the coordinates are read from its grid)"}

// think rewrites the assistant answers of demos with the scratchpad kind.
func think(kind string, demos []textrl.Transcript) error {
	rewrite := func(t *textrl.Transcript) error { return thinkCoords(t, kind) } // coords, coords-neighbours
	switch kind {
	case "reversed-digits":
		rewrite = thinkReversed
	case "padded-digits":
		width := 0
		for i := range demos {
			for _, m := range demos[i].Messages {
				if m.Role == "assistant" {
					width = max(width, len(strings.TrimPrefix(m.Content, "-")))
				}
			}
		}
		rewrite = func(t *textrl.Transcript) error { return thinkPadded(t, width) }
	}
	for i := range demos {
		if err := rewrite(&demos[i]); err != nil {
			return fmt.Errorf("demonstration %d: %w", i+1, err)
		}
	}
	return nil
}

// thinkPadded rewrites each assistant answer of digits (with an optional
// sign) as <think>the answer with leading zeros to width digits</think>the
// answer. With rotary positions only, a model finds an operand's digit at
// a fixed distance from the answer digit it feeds when every answer has
// the same width and the usual order; a reversed answer needs the mirror
// image of the operands, which a small model learns far more slowly.
func thinkPadded(t *textrl.Transcript, width int) error {
	for i, m := range t.Messages {
		if m.Role != "assistant" {
			continue
		}
		sign, digits := "", m.Content
		if rest, ok := strings.CutPrefix(digits, "-"); ok {
			sign, digits = "-", rest
		}
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return fmt.Errorf("--think padded-digits needs answers of digits, not %q", m.Content)
		}
		t.Messages[i].Content = "<think>" + sign + strings.Repeat("0", width-len(digits)) + digits + "</think>" + m.Content
	}
	return nil
}

// thinkCoords writes before each FrozenLake move where the player and the
// goal stand, row and column from 1, read from the grid of the observation
// before it: "P34G32 ```Left```" (P in row 3, column 4; G in row 3, column
// 2). The agent reads the move from the last ``` ``` block, so the move is
// unchanged. With rotary positions only, a small model cannot read where a
// tile lies from the grid directly (attention values carry no position),
// but each digit here is a lookup at a fixed distance from itself; given
// them, the move is a comparison. Measured on the same demonstrations, a
// 4-layer model's held-out move accuracy stayed at 23–31 % over 6,000 steps
// without it and passed 80 % in 1,000 with it.
//
// With kind coords-neighbours, the tiles left, right, above and
// below P follow, "#" off the lake: "P34G32G#O_ ```Left```". Each is again
// a lookup at a fixed distance, now from P's tile, and the move becomes a
// choice among the written tiles rather than a second lookup in the grid.
func thinkCoords(t *textrl.Transcript, kind string) error {
	grid := ""
	for i, m := range t.Messages {
		switch m.Role {
		case "user":
			grid = m.Content
		case "assistant":
			lake := frozenlake.ReadLake(grid)
			pr, pc, okP := lake.Find("P")
			gr, gc, okG := lake.Find("G")
			switch {
			case !okP || !okG:
				return fmt.Errorf("--think %s, message %d: the observation before the move shows no P and G tiles", kind, i+1)
			case max(pr, pc, gr, gc) > 9:
				return fmt.Errorf("--think %s, message %d: a lake wider than 9 tiles (coords writes one digit a coordinate)", kind, i+1)
			}
			pad := fmt.Sprintf("P%d%dG%d%d", pr, pc, gr, gc)
			if kind == "coords-neighbours" {
				for _, d := range [][2]int{{0, -1}, {0, 1}, {-1, 0}, {1, 0}} {
					tile, ok := lake.At(pr+d[0], pc+d[1])
					if !ok {
						tile = "#"
					}
					pad += tile
				}
			}
			t.Messages[i].Content = pad + " " + m.Content
		}
	}
	return nil
}

// thinkReversed rewrites each assistant answer of digits (with an optional
// sign) as <think>the digits last-first</think>the answer: a scratchpad
// that lets a small model compute a sum from its lowest digit up, carries
// and all, before writing it in the usual order. The single-turn agent
// grades only what follows </think>, so the answer is unchanged.
func thinkReversed(t *textrl.Transcript) error {
	for i, m := range t.Messages {
		if m.Role != "assistant" {
			continue
		}
		digits := strings.TrimPrefix(m.Content, "-")
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return fmt.Errorf("--think reversed-digits needs answers of digits, not %q", m.Content)
		}
		r := []byte(digits)
		slices.Reverse(r)
		t.Messages[i].Content = "<think>" + string(r) + "</think>" + m.Content
	}
	return nil
}
