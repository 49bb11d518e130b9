package textrl

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// batcher gathers the episodes' requests into Generate calls, one at a time
// (the model is one device): a batch goes out when it is full, when every
// worker still playing episodes is waiting for the model, or when no new
// request came for Linger while some are still busy in their environments.
type batcher struct {
	ctx      context.Context
	gen      Generator
	maxBatch int
	linger   time.Duration

	mu      sync.Mutex
	active  int // workers still playing episodes
	pending []*call
	busy    bool
	timer   *time.Timer

	batches, requests, largest int
}

type call struct {
	req Request
	res chan callResult
}

type callResult struct {
	g   Generation
	err error
}

func newBatcher(ctx context.Context, gen Generator, maxBatch int, linger time.Duration) *batcher {
	return &batcher{ctx: ctx, gen: gen, maxBatch: maxBatch, linger: linger}
}

func (b *batcher) enter() {
	b.mu.Lock()
	b.active++
	b.mu.Unlock()
}

func (b *batcher) leave() {
	b.mu.Lock()
	b.active--
	b.flushLocked()
	b.mu.Unlock()
}

// generate queues req and waits for its generation or ctx.
func (b *batcher) generate(ctx context.Context, req Request) (Generation, error) {
	c := &call{req: req, res: make(chan callResult, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.flushLocked()
	b.mu.Unlock()
	select {
	case r := <-c.res:
		return r.g, r.err
	case <-ctx.Done():
		b.mu.Lock()
		if i := slices.Index(b.pending, c); i >= 0 {
			b.pending = slices.Delete(b.pending, i, i+1)
		}
		b.flushLocked()
		b.mu.Unlock()
		return Generation{}, ctx.Err()
	}
}

// flushLocked sends a batch if one is due, or arms the linger timer.
func (b *batcher) flushLocked() {
	if b.busy || len(b.pending) == 0 {
		return
	}
	if len(b.pending) < b.maxBatch && len(b.pending) < b.active {
		if b.timer == nil {
			b.timer = time.AfterFunc(b.linger, func() {
				b.mu.Lock()
				b.timer = nil
				if !b.busy && len(b.pending) > 0 {
					b.send()
				}
				b.mu.Unlock()
			})
		}
		return
	}
	b.send()
}

// send starts a Generate call with up to maxBatch pending requests.
func (b *batcher) send() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	n := min(len(b.pending), b.maxBatch)
	batch := slices.Clone(b.pending[:n])
	b.pending = slices.Delete(b.pending, 0, n)
	b.busy = true
	b.batches++
	b.requests += n
	b.largest = max(b.largest, n)
	go func() {
		gens, err := b.call(batch)
		for i, c := range batch {
			if err != nil {
				c.res <- callResult{err: err}
			} else {
				c.res <- callResult{g: gens[i]}
			}
		}
		b.mu.Lock()
		b.busy = false
		b.flushLocked()
		b.mu.Unlock()
	}()
}

// call runs the generator, turning a panic or a wrong number of results
// into an error for every request of the batch.
func (b *batcher) call(batch []*call) (gens []Generation, err error) {
	defer func() {
		if r := recover(); r != nil {
			gens, err = nil, fmt.Errorf("the generator failed: %v", r)
		}
	}()
	reqs := make([]Request, len(batch))
	for i, c := range batch {
		reqs[i] = c.req
	}
	gens, err = b.gen.Generate(b.ctx, reqs)
	if err != nil {
		return nil, fmt.Errorf("the generator: %w", err)
	}
	if len(gens) != len(reqs) {
		return nil, fmt.Errorf("the generator returned %d generations for %d requests", len(gens), len(reqs))
	}
	return gens, nil
}
