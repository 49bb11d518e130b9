package hostile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// st is a safetensors file taken apart: its header (tensors and metadata)
// and the data after it.
type st struct {
	hdr  map[string]any // as decoded, numbers as json.Number
	meta map[string]string
	data []byte
}

func readST(path string) (*st, error) {
	// Only plain files of a sane size: the cases plant symlinks to
	// /dev/zero, which os.ReadFile would read without end.
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
		return nil, fmt.Errorf("not a plain checkpoint file")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseST(b)
}

func parseST(b []byte) (*st, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("short")
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("header past the end")
	}
	d := json.NewDecoder(bytes.NewReader(b[8 : 8+n]))
	d.UseNumber()
	s := &st{meta: map[string]string{}}
	if err := d.Decode(&s.hdr); err != nil {
		return nil, err
	}
	if m, ok := s.hdr["__metadata__"].(map[string]any); ok {
		for k, v := range m {
			s.meta[k], _ = v.(string)
		}
	}
	s.data = b[8+n:]
	return s, nil
}

func (s *st) bytes() []byte {
	m := map[string]any{}
	for k, v := range s.meta {
		m[k] = v
	}
	if _, ok := s.hdr["__metadata__"]; ok {
		s.hdr["__metadata__"] = m
	}
	h, _ := json.Marshal(s.hdr)
	out := make([]byte, 8, 8+len(h)+len(s.data))
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	return append(append(out, h...), s.data...)
}

func (s *st) tensor(name string) map[string]any {
	t, _ := s.hdr[name].(map[string]any)
	return t
}

// setF32 writes v into element i of a float32 tensor.
func (s *st) setF32(name string, i int, v float32) {
	t := s.tensor(name)
	if t == nil {
		return
	}
	offs := t["data_offsets"].([]any)
	start, _ := offs[0].(json.Number).Int64()
	binary.LittleEndian.PutUint32(s.data[int(start)+4*i:], math.Float32bits(v))
}

// base is a trained run every checkpoint case copies: CartPole-v1,
// threads=1, a checkpoint each iteration, the newest three kept.
var base struct {
	once sync.Once
	dir  string
	err  error
	ckpt []string // checkpoint names, oldest first
}

const baseSteps = 4096 // 8 iterations of 512

func baseRun(c *cx) (string, bool) {
	base.once.Do(func() {
		dir, err := os.MkdirTemp("", "hostile-base-")
		if err != nil {
			base.err = err
			return
		}
		base.dir = filepath.Join(dir, "run")
		r := c.run(opt{dir: dir}, "train", "--quiet", "--run-dir", base.dir, "env.id=CartPole-v1", "trainer.seed=1",
			"trainer.threads=1", "trainer.save_freq=1", "ppo.total_timesteps="+strconv.Itoa(baseSteps))
		if r.code != 0 {
			base.err = fmt.Errorf("base training: exit %d: %s", r.code, lastLines(r.out, 3))
			return
		}
		for _, e := range dirEntries(filepath.Join(base.dir, "checkpoints")) {
			if strings.HasSuffix(e, ".safetensors") {
				base.ckpt = append(base.ckpt, e)
			}
		}
		sort.Slice(base.ckpt, func(i, j int) bool { return stepOf(base.ckpt[i]) < stepOf(base.ckpt[j]) })
		if len(base.ckpt) < 2 {
			base.err = fmt.Errorf("base training kept %d checkpoints", len(base.ckpt))
		}
	})
	if base.err != nil {
		c.fail("%v", base.err)
		return "", false
	}
	dst := c.path("run")
	if err := copyDir(base.dir, dst); err != nil {
		c.fail("copy: %v", err)
		return "", false
	}
	return dst, true
}

func stepOf(name string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "step-"), ".safetensors"))
	return n
}

func copyDir(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}
