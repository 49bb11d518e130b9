package sft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"strconv"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

// A supervised phase's progress, so that a stopped one continues where it
// was (TrainOptions.State): the parameters, Adam's moments, the step, the
// time spent and the figures of the epoch in hand, with a fingerprint of
// the examples and the settings that fix the batches' order. Written
// atomically as a safetensors file.

const stateFormat = "agenttrainer-sft-state-1"

// trainState is the progress a state file holds besides the tensors.
type trainState struct {
	Step     int           // optimiser steps taken
	EpochSum float64       // the sum of the current epoch's step losses
	Loss     float64       // Result.TrainLoss so far (NaN: none yet)
	HeldOut  float64       // the last held-out loss (NaN: none yet)
	Tokens   int64         // trained tokens so far
	Elapsed  time.Duration // training time so far
	Done     bool          // the training ended (all epochs, or the time budget)
}

// fingerprint identifies what the batches of a training depend on: the
// examples (ids and masks) and the settings that order and pack them.
func fingerprint(train, heldout []Example, o TrainOptions) string {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(o.Seed)
	put(uint64(o.Epochs))
	put(uint64(o.BatchTokens))
	for _, set := range [][]Example{train, heldout} {
		put(uint64(len(set)))
		for _, e := range set {
			put(uint64(len(e.IDs)))
			for i, id := range e.IDs {
				put(uint64(uint32(id)) | uint64(e.Mask[i])<<32)
			}
		}
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// saveState writes the trainer's progress to path.
func (t *Trainer) saveState(path, fp string, st trainState) error {
	n := t.m.NumParams()
	ts := make([]safetensors.Tensor, 3)
	for i, src := range []struct {
		name string
		get  func([]float32)
	}{
		{"params", func(h []float32) { t.m.Dev.Download(h, t.m.Params) }},
		{"exp_avg", func(h []float32) { t.m.Dev.Download(h, t.mom) }},
		{"exp_avg_sq", func(h []float32) { t.m.Dev.Download(h, t.vel) }},
	} {
		ts[i] = safetensors.Tensor{Name: src.name, Shape: []int{n}, Data: make([]float32, n)}
		src.get(ts[i].Data)
	}
	meta := map[string]string{
		"format": stateFormat, "fingerprint": fp,
		"step": strconv.Itoa(st.Step), "epoch_sum": strconv.FormatFloat(st.EpochSum, 'g', -1, 64),
		"held_out": strconv.FormatFloat(st.HeldOut, 'g', -1, 64), "train_loss": strconv.FormatFloat(st.Loss, 'g', -1, 64), "tokens": strconv.FormatInt(st.Tokens, 10),
		"elapsed_ns": strconv.FormatInt(int64(st.Elapsed), 10), "done": strconv.FormatBool(st.Done),
	}
	return safetensors.Write(path, ts, meta, safetensors.F32)
}

// loadState puts the progress of the state file at path into the trainer;
// found is false when there is none. A file of another training (other
// examples or settings, another model) is refused, saying how to start
// over.
func (t *Trainer) loadState(path, fp string, steps int) (st trainState, found bool, err error) {
	f, err := safetensors.Open(path, safetensors.Options{DTypes: []safetensors.DType{safetensors.F32}, Finite: true})
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("the supervised phase's state %s: %w (remove it to start the phase over)", path, err)
	}
	defer f.Close()
	bad := func(format string, args ...any) (trainState, bool, error) {
		return st, false, fmt.Errorf("the supervised phase's state %s: %s; remove it to start the phase over", path, fmt.Sprintf(format, args...))
	}
	if f.Meta["format"] != stateFormat {
		return bad("not a state file of this program (format %q)", f.Meta["format"])
	}
	if f.Meta["fingerprint"] != fp {
		return bad("it was saved by a training of other examples or settings (data, epochs, batch tokens, seed)")
	}
	n := t.m.NumParams()
	if f.Float32Bytes() != int64(3*4*n) {
		return bad("it holds %d values, not the 3×%d of this model's parameters and Adam's moments (another model?)", f.Float32Bytes()/4, n)
	}
	var ints [2]int64
	for i, k := range []string{"step", "tokens"} {
		if ints[i], err = strconv.ParseInt(f.Meta[k], 10, 64); err != nil || ints[i] < 0 {
			return bad("bad %s %q", k, f.Meta[k])
		}
	}
	st.Step, st.Tokens = int(ints[0]), ints[1]
	if st.Step > steps {
		return bad("it is at step %d of a training of %d", st.Step, steps)
	}
	if st.EpochSum, err = strconv.ParseFloat(f.Meta["epoch_sum"], 64); err != nil || math.IsInf(st.EpochSum, 0) || math.IsNaN(st.EpochSum) {
		return bad("bad epoch_sum %q", f.Meta["epoch_sum"])
	}
	if st.HeldOut, err = strconv.ParseFloat(f.Meta["held_out"], 64); err != nil {
		return bad("bad held_out %q", f.Meta["held_out"])
	}
	if st.Loss, err = strconv.ParseFloat(f.Meta["train_loss"], 64); err != nil {
		return bad("bad train_loss %q", f.Meta["train_loss"])
	}
	ns, err := strconv.ParseInt(f.Meta["elapsed_ns"], 10, 64)
	if err != nil || ns < 0 {
		return bad("bad elapsed_ns %q", f.Meta["elapsed_ns"])
	}
	st.Elapsed = time.Duration(ns)
	if st.Done, err = strconv.ParseBool(f.Meta["done"]); err != nil {
		return bad("bad done %q", f.Meta["done"])
	}
	var host [3][]float32 // all read and checked before any is used
	for i, name := range []string{"params", "exp_avg", "exp_avg_sq"} {
		e, ok := f.Entry(name)
		if !ok || e.Elements() != int64(n) {
			return bad("no tensor %s of %d values", name, n)
		}
		host[i] = make([]float32, n)
		if err := f.Read(name, host[i]); err != nil {
			return bad("%v", err)
		}
	}
	t.m.Dev.Upload(t.m.Params, host[0])
	t.m.Dev.Upload(t.mom, host[1])
	t.m.Dev.Upload(t.vel, host[2])
	t.step = st.Step
	return st, true, nil
}
