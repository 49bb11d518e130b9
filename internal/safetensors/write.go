package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
)

// Write writes tensors to path atomically (streamed into a temporary file,
// synced, renamed), stored as dtype.
func Write(path string, tensors []Tensor, meta map[string]string, dtype DType) error {
	return atomicfile.Stream(path, 0o644, func(w io.Writer) error {
		return WriteTo(w, tensors, meta, dtype)
	})
}

// shardName matches the shards transformers writes: model-00001-of-00003.safetensors.
var shardName = regexp.MustCompile(`^model-[0-9]{5}-of-[0-9]{5}\.safetensors$`)

// WriteDir writes a model's tensors into dir as transformers lays them
// out: model.safetensors when they fit in maxShard bytes (0: no limit),
// else shards model-0000i-of-0000n.safetensors, filled in the order given,
// and model.safetensors.index.json. The index is written last, so a crash
// leaves the previous model readable; the files of a previous layout that
// the new one does not use are removed afterwards.
func WriteDir(dir string, tensors []Tensor, meta map[string]string, dtype DType, maxShard int64) error {
	if !dtype.readable() {
		return fmt.Errorf("cannot write dtype %s (F32, BF16 or F16)", dtype)
	}
	size := int64(dtype.Size())
	var shards [][]Tensor
	var total, cur int64
	for _, t := range tensors {
		n := int64(len(t.Data)) * size
		if len(shards) == 0 || maxShard > 0 && cur+n > maxShard && cur > 0 {
			shards = append(shards, nil)
			cur = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		cur += n
		total += n
	}
	if len(shards) <= 1 {
		if err := Write(filepath.Join(dir, SingleName), tensors, meta, dtype); err != nil {
			return err
		}
		return removeStale(dir, map[string]bool{SingleName: true})
	}
	keep := map[string]bool{IndexName: true}
	weightMap := map[string]string{}
	for i, shard := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := Write(filepath.Join(dir, name), shard, meta, dtype); err != nil {
			return err
		}
		keep[name] = true
		for _, t := range shard {
			weightMap[t.Name] = name
		}
	}
	idx, err := json.MarshalIndent(map[string]any{
		"metadata":   map[string]any{"total_size": total},
		"weight_map": weightMap,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, IndexName), append(idx, '\n'), 0o644); err != nil {
		return err
	}
	return removeStale(dir, keep)
}

// removeStale deletes the model files in dir that keep does not name: the
// index (first: it is what makes shards the model), a single file, shards.
func removeStale(dir string, keep map[string]bool) error {
	if !keep[IndexName] {
		if err := os.Remove(filepath.Join(dir, IndexName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if keep[name] || e.IsDir() || name != SingleName && !shardName.MatchString(name) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
