package textrl

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/envs"
	_ "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
)

// charTokenizer is a from-scratch model's tokenizer that knows the
// FrozenLake glyphs.
func charTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.NewChar(tokenizer.DefaultCharset+"√", nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// qwen3Tokenizer is the real Qwen3 tokenizer (agents/lm/tokenizer's
// fixture).
func qwen3Tokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	dir := "../../agents/lm/tokenizer/testdata/qwen3"
	f, err := os.Open(dir + "/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(dir + "/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Parse(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// policy answers a decoded prompt; seed is the request's.
type policy func(prompt string, seed uint64) (answer string, stop bool)

// scripted is a Generator that answers by a policy over the decoded
// prompt: the answer's ids, then the end-of-turn id when it stops, with
// log-probabilities that depend on the id and its place.
type scripted struct {
	tok    *tokenizer.Tokenizer
	eos    int
	policy policy

	mu         sync.Mutex
	batchSizes []int
	prompts    [][]int
}

func newScripted(t testing.TB, tok *tokenizer.Tokenizer, p policy) *scripted {
	return newScriptedEOS(t, tok, p, "<|im_end|>")
}

// newScriptedEOS ends each answer with the token named eos.
func newScriptedEOS(t testing.TB, tok *tokenizer.Tokenizer, p policy, eos string) *scripted {
	id, ok := tok.TokenID(eos)
	if !ok {
		t.Fatalf("the tokenizer has no %s", eos)
	}
	return &scripted{tok: tok, eos: id, policy: p}
}

func fakeLogProb(id, pos int) float32 { return -0.01 * float32(1+(id+pos)%7) }

func (s *scripted) Generate(_ context.Context, reqs []Request) ([]Generation, error) {
	s.mu.Lock()
	s.batchSizes = append(s.batchSizes, len(reqs))
	s.mu.Unlock()
	out := make([]Generation, len(reqs))
	for i, r := range reqs {
		s.mu.Lock()
		s.prompts = append(s.prompts, r.PromptIDs)
		s.mu.Unlock()
		text, stop := s.policy(s.tok.Decode(r.PromptIDs), r.Params.Seed)
		ids := s.tok.Encode(text, false)
		finish := FinishLength
		if stop {
			ids = append(ids, s.eos)
			finish = FinishStop
		}
		if len(ids) > r.Params.MaxTokens {
			ids, finish = ids[:r.Params.MaxTokens], FinishLength
		}
		lp := make([]float32, len(ids))
		for k, id := range ids {
			lp[k] = fakeLogProb(id, k)
		}
		out[i] = Generation{IDs: ids, LogProbs: lp, Finish: finish}
	}
	return out, nil
}

// lastGrid reads the last FrozenLake observation of a prompt: rows of
// tiles 'P', '_', 'O', 'G'.
func lastGrid(prompt string) [][]byte {
	i := strings.LastIndex(prompt, "): \n")
	if i < 0 {
		return nil
	}
	body := prompt[i+4:]
	body = body[:strings.Index(body, "\nYou have not")]
	var grid [][]byte
	for _, line := range strings.Split(body, "\n") {
		var row []byte
		for _, cell := range strings.Split(strings.TrimSuffix(line, "\t"), "\t") {
			row = append(row, strings.TrimSpace(cell)[0])
		}
		grid = append(grid, row)
	}
	return grid
}

// bestMove is the first move of a shortest way from P to G.
func bestMove(grid [][]byte) string {
	n := len(grid)
	type pos struct{ r, c int }
	var goal, player pos
	for r := range grid {
		for c := range grid[r] {
			switch grid[r][c] {
			case 'G':
				goal = pos{r, c}
			case 'P':
				player = pos{r, c}
			}
		}
	}
	dist := map[pos]int{goal: 0}
	queue := []pos{goal}
	moves := []struct {
		name   string
		dr, dc int
	}{{"Left", 0, -1}, {"Down", 1, 0}, {"Right", 0, 1}, {"Up", -1, 0}}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, m := range moves {
			q := pos{p.r - m.dr, p.c - m.dc}
			if q.r < 0 || q.r >= n || q.c < 0 || q.c >= n || grid[q.r][q.c] == 'O' {
				continue
			}
			if _, seen := dist[q]; !seen {
				dist[q] = dist[p] + 1
				queue = append(queue, q)
			}
		}
	}
	for _, m := range moves {
		q := pos{player.r + m.dr, player.c + m.dc}
		if d, ok := dist[q]; ok && d == dist[player]-1 {
			return m.name
		}
	}
	return "Up"
}

// solver plays FrozenLake perfectly, thinking aloud a little.
func solver(prompt string, _ uint64) (string, bool) {
	return "I go ```" + bestMove(lastGrid(prompt)) + "```", true
}

func chatML() chat.Renderer { return chat.NewChatML(chat.ChatMLOptions{}) }

func lakeTasks(n int) []envs.Params {
	var tasks []envs.Params
	for i := range n {
		tasks = append(tasks, envs.Params{"seed": int64(100 + i), "size": int64(4), "p": 0.8})
	}
	return tasks
}
