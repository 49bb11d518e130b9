package lm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

// ScoreOptions are `lm score`'s flags.
type ScoreOptions struct {
	Model string
	deviceFlags
	// BatchTokens bounds the tokens (rows × longest row) scored at once.
	BatchTokens int
}

func parseScore(args []string) (*ScoreOptions, error) {
	o := &ScoreOptions{}
	fs := cmdutil.NewFlags("lm score", "--model DIR < lines.jsonl",
		`score completions, teacher-forced: each JSON line {"prompt": "...", "completion": "..."} or {"prompt_ids": [...], "completion_ids": [...]} on standard input gives one line {"logprobs": [...]}, the log-probability of each completion token given the tokens before it`)
	fs.StringVar(&o.Model, "model", "", "the model `directory`")
	fs.IntVar(&o.BatchTokens, "batch-tokens", 4096, "tokens scored at once (lines that have arrived are batched up to this, padded to the longest)")
	o.deviceFlags.add(fs)
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(rest) > 0:
		return nil, cmdutil.Usagef("lm score: unexpected argument %q (the lines come on standard input)", rest[0])
	case o.Model == "":
		return nil, &cmdutil.UsageError{Err: errors.New("lm score needs --model DIR"), Usage: fs.Usage()}
	case o.BatchTokens < 1:
		return nil, cmdutil.Usagef("lm score: --batch-tokens must be at least 1, not %d", o.BatchTokens)
	}
	return o, o.deviceFlags.check("score")
}

// scoreLine is one input line: texts or ids.
type scoreLine struct {
	Prompt        *string  `json:"prompt"`
	Completion    *string  `json:"completion"`
	PromptIDs     *[]int64 `json:"prompt_ids"`
	CompletionIDs *[]int64 `json:"completion_ids"`
}

// scoreRow is a line's tokens: the prompt's, then the completion's.
type scoreRow struct {
	ids    []int32
	prompt int // the prompt's length
}

// maxBatchRows bounds the lines scored together.
const maxBatchRows = 64

func runScore(ctx context.Context, o ScoreOptions, in io.Reader, stdout io.Writer) error {
	tok, err := loadTokenizer(o.Model)
	if err != nil {
		return err
	}
	dev, err := o.open()
	if err != nil {
		return err
	}
	defer dev.Close()
	m, err := loadModel(dev, o.Model)
	if err != nil {
		return err
	}
	s := &scorer{m: m, tok: tok, budget: o.BatchTokens}
	lines := newLineReader(in)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	var batch []scoreRow
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := s.score(batch)
		if err != nil {
			return err
		}
		for _, lp := range out {
			b, _ := json.Marshal(struct {
				LogProbs []float32 `json:"logprobs"`
			}{lp})
			w.Write(append(b, '\n'))
		}
		batch = batch[:0]
		return w.Flush()
	}
	for {
		if err := interrupted(ctx); err != nil {
			return err
		}
		line, err := lines.next()
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return err
		}
		row, err := s.parse(line)
		if err != nil {
			if ferr := flush(); ferr != nil { // the good lines before it are answered
				return ferr
			}
			return lines.errorf("%v", err)
		}
		longest := len(row.ids)
		for _, r := range batch {
			longest = max(longest, len(r.ids))
		}
		if len(batch) > 0 && (len(batch) == maxBatchRows || (len(batch)+1)*longest > s.budget) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, row)
		if !lines.pending() { // score what has arrived rather than wait for more
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// scorer scores batches of rows through a pass it grows as needed.
type scorer struct {
	m      *lm.Model
	tok    *tokenizer.Tokenizer
	budget int
	pass   *lm.Pass
	size   int // the pass's tokens
}

// parse reads a line into a row, checking its ids and length.
func (s *scorer) parse(line []byte) (scoreRow, error) {
	var l scoreLine
	if err := decodeStrict(line, &l); err != nil {
		return scoreRow{}, fmt.Errorf(`want {"prompt": "...", "completion": "..."} or {"prompt_ids": [...], "completion_ids": [...]}: %v`, err)
	}
	texts, ids := l.Prompt != nil || l.Completion != nil, l.PromptIDs != nil || l.CompletionIDs != nil
	var row scoreRow
	switch {
	case texts && ids:
		return row, errors.New("give prompt and completion as texts or as ids, not both")
	case texts:
		if l.Prompt == nil || l.Completion == nil {
			return row, errors.New(`"prompt" and "completion" are both needed`)
		}
		p := s.tok.Encode(*l.Prompt, true) // the post-processor's tokens (Llama-3's <|begin_of_text|>) go first
		c := s.tok.Encode(*l.Completion, false)
		row.ids = make([]int32, 0, len(p)+len(c))
		for _, id := range append(p, c...) {
			row.ids = append(row.ids, int32(id))
		}
		row.prompt = len(p)
	case ids:
		if l.PromptIDs == nil || l.CompletionIDs == nil {
			return row, errors.New(`"prompt_ids" and "completion_ids" are both needed`)
		}
		v := s.m.Config.VocabSize
		for k, list := range []*[]int64{l.PromptIDs, l.CompletionIDs} {
			for i, id := range *list {
				if id < 0 || id >= int64(v) {
					return row, fmt.Errorf("%s[%d] = %d is outside the vocabulary of %d tokens", []string{"prompt_ids", "completion_ids"}[k], i, id, v)
				}
				row.ids = append(row.ids, int32(id))
			}
		}
		row.prompt = len(*l.PromptIDs)
	default:
		return row, errors.New(`want {"prompt": "...", "completion": "..."} or {"prompt_ids": [...], "completion_ids": [...]}`)
	}
	if row.prompt == 0 && len(row.ids) > 0 {
		return row, errors.New("the prompt is empty: the first completion token needs at least one token before it")
	}
	if n, ctx := len(row.ids), s.m.Config.MaxPositions; n > ctx {
		return row, fmt.Errorf("prompt and completion are %d tokens, longer than the model's context of %d", n, ctx)
	}
	return row, nil
}

// score returns each row's completion log-probs, the rows padded on the
// right to the longest.
func (s *scorer) score(rows []scoreRow) ([][]float32, error) {
	seq := 1
	scored := 0
	for _, r := range rows {
		seq = max(seq, len(r.ids))
		scored += len(r.ids) - r.prompt
	}
	n := len(rows) * seq
	if s.pass == nil || n > s.size {
		size := max(n, min(s.budget, 1024))
		p, err := s.m.NewPass(size, size)
		if err != nil {
			return nil, cmdutil.Configf("scoring %d lines of up to %d tokens: %v", len(rows), seq, err)
		}
		s.pass, s.size = p, size
	}
	b := lm.Batch{Rows: len(rows), Seq: seq, IDs: make([]int32, n), Mask: make([]int32, n), Targets: make([]int32, n)}
	for i, r := range rows {
		for t := 0; t < seq; t++ {
			k := i*seq + t
			b.Targets[k] = -1
			if t < len(r.ids) {
				b.IDs[k], b.Mask[k] = r.ids[t], 1
			}
			// Position t's logits score token t+1 of the completion.
			if t+1 >= r.prompt && t+1 < len(r.ids) {
				b.Targets[k] = r.ids[t+1]
			}
		}
	}
	sc, err := s.pass.Forward(b, lm.ForwardOptions{})
	if err != nil {
		return nil, fmt.Errorf("scoring: %v", err)
	}
	out := make([][]float32, len(rows))
	k := 0
	for i, r := range rows {
		c := len(r.ids) - r.prompt
		out[i] = sc.LogProbs[k : k+c : k+c]
		k += c
	}
	if k != scored {
		return nil, fmt.Errorf("scoring: %d log-probs for %d completion tokens", k, scored)
	}
	return out, nil
}
