package tokenizer

import (
	"sync"
	"unicode/utf8"
)

// bpe applies merges by rank to one pre-token. Symbols are token ids; a merge
// of the pair (left, right) has a rank (its line in the merges list: lower
// merges first) and the id of the merged token.
type bpe struct {
	merges       map[uint64]merge
	byteIDs      [256]int32 // byte-level models: the token of each byte (-1: none)
	byteLevel    bool
	vocab        map[string]int32 // byte-level models: keyed by the raw bytes
	unk          int32            // -1: none
	fuseUnk      bool
	ignoreMerges bool

	mu    sync.RWMutex
	cache map[string][]int
}

type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

const (
	cacheCapacity = 1 << 16 // entries; then the cache stops growing
	cacheMaxLen   = 256     // bytes: longer words are rarely repeated
)

// symbol is one node of the doubly linked list of a word's current tokens.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends
	size       int32 // bytes covered; 0 once merged into its left neighbour
}

// candidate is a possible merge of the symbol at pos with its right neighbour.
type candidate struct {
	rank, pos, id int32
}

// candidates is a binary min-heap (by hand: container/heap would box every
// element).
type candidates []candidate

// before orders by rank, then the leftmost of equal pairs first, as Hugging
// Face does.
func (a candidate) before(b candidate) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}

func (c *candidates) push(x candidate) {
	h := append(*c, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*c = h
}

func (c *candidates) pop() candidate {
	h := *c
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l].before(h[m]) {
			m = l
		}
		if l+1 < n && h[l+1].before(h[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*c = h
	return top
}

type scratch struct {
	syms []symbol
	heap candidates
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// encode appends the ids of word to out.
func (m *bpe) encode(word string, out []int) []int {
	if len(word) == 0 {
		return out
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[word]; ok {
			return append(out, int(id))
		}
	}
	if len(word) <= cacheMaxLen {
		m.mu.RLock()
		ids, ok := m.cache[word]
		m.mu.RUnlock()
		if ok {
			return append(out, ids...)
		}
	}
	start := len(out)
	out = m.merge(word, out)
	if len(word) <= cacheMaxLen {
		m.mu.Lock()
		if len(m.cache) < cacheCapacity {
			m.cache[word] = append([]int(nil), out[start:]...)
		}
		m.mu.Unlock()
	}
	return out
}

// merge runs the merges over word with a heap of candidate pairs: each merge
// costs O(log n) instead of a rescan of the word.
func (m *bpe) merge(word string, out []int) []int {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	syms := sc.syms[:0]
	if m.byteLevel {
		for i := 0; i < len(word); i++ {
			id := m.byteIDs[word[i]]
			if id < 0 {
				id = m.unk
			}
			syms = append(syms, symbol{id: id, size: 1})
		}
	} else {
		for _, r := range word {
			id, ok := m.vocab[string(r)]
			if !ok {
				id = m.unk
			}
			w := utf8.RuneLen(r)
			if w < 0 {
				w = 3 // U+FFFD for a replaced byte
			}
			syms = append(syms, symbol{id: id, size: int32(w)})
		}
	}
	for i := range syms {
		syms[i].prev, syms[i].next = int32(i-1), int32(i+1)
	}
	syms[len(syms)-1].next = -1

	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(candidate{mg.rank, int32(i), mg.id})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		left := &syms[top.pos]
		if left.size == 0 || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		if mg, ok := m.merges[pairKey(left.id, right.id)]; !ok || mg.id != top.id {
			continue // stale: one side has merged since
		}
		left.id = top.id
		left.size += right.size
		right.size = 0
		left.next = right.next
		if left.next >= 0 {
			syms[left.next].prev = top.pos
			if mg, ok := m.merges[pairKey(left.id, syms[left.next].id)]; ok {
				h.push(candidate{mg.rank, top.pos, mg.id})
			}
		}
		if left.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[left.prev].id, left.id)]; ok {
				h.push(candidate{mg.rank, left.prev, mg.id})
			}
		}
	}
	unkRun := false
	for i := int32(0); i >= 0; i = syms[i].next {
		id := syms[i].id
		if id < 0 {
			continue // no token and no unk token: Hugging Face drops it too
		}
		if id == m.unk && m.fuseUnk {
			if unkRun {
				continue
			}
			unkRun = true
		} else {
			unkRun = false
		}
		out = append(out, int(id))
	}
	sc.syms, sc.heap = syms, h
	return out
}
