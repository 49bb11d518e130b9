package gpu

import "fmt"

// TransformerOps is a Device that runs the layers of a decoder-only
// transformer (agents/lm): token embeddings, RMSNorm, rotary embeddings,
// SwiGLU, causal grouped-query attention (over a padded batch, and over a
// KV cache while generating) and the log-probabilities of chosen tokens,
// each with its backward. Projections are MatMul (or Linear, which may
// take a faster route for the one-row products of decoding).
//
// Index arguments (token ids, positions, slots, targets) are host slices,
// as GatherRows takes them: they are small, and the host makes them.
type TransformerOps interface {
	Device

	// Linear computes C = A·B + beta·C with A and B as stored (A m×k, B
	// k×n), as MatMul(c, a, false, b, false, beta) does, with the same
	// bits for every row whatever m is.
	Linear(c, a, b Tensor, beta float32)
	// Add computes dst += src elementwise.
	Add(dst, src Tensor)

	// Embed copies row ids[i] of table (V×H) into out's row i, or column
	// ids[i] when transposed (table H×V: a tied lm_head's layout).
	Embed(out, table Tensor, ids []int32, transposed bool)
	// EmbedGrad is Embed's adjoint: it adds dout's row i into row (or
	// column) ids[i] of dtable.
	EmbedGrad(dtable, dout Tensor, ids []int32, transposed bool)

	// RMSNorm normalises groups of a.Width columns (see NormArgs).
	RMSNorm(a NormArgs)
	// RMSNormGrad writes (or adds) DX and adds into DW (see NormArgs).
	RMSNormGrad(a NormArgs)

	// Rope rotates heads in place (see RopeArgs).
	Rope(a RopeArgs)

	// SwiGLU computes h = silu(g) ⊙ u for gu = [g | u] (N×2I → N×I).
	SwiGLU(h, gu Tensor)
	// SwiGLUGrad writes dgu (N×2I) from dh (N×I) and gu.
	SwiGLUGrad(dgu, dh, gu Tensor)

	// Attention is causal grouped-query attention over a padded batch,
	// saving each row's log-sum-exp for the backward (see AttentionArgs).
	Attention(a AttentionArgs)
	// AttentionGrad writes DQKV from DOut (see AttentionArgs).
	AttentionGrad(a AttentionArgs)
	// CacheAttention stores new keys and values in a KV cache and attends
	// each new token to its sequence's cache (see CacheArgs).
	CacheAttention(a CacheArgs)

	// LogProbs computes each row's log-probability of its target (and its
	// entropy) under softmax(logits·InvTemp) (see LogProbArgs).
	LogProbs(a LogProbArgs)
	// LogProbsGrad overwrites Logits with the gradient of
	// Σ DLogP·logp + DEntropy·entropy with respect to them.
	LogProbsGrad(a LogProbArgs)
}

// NormArgs are an RMSNorm's operands: in each row of X (N×C), Groups
// groups of Width columns from column Col are each normalised as
// y = x / sqrt(mean(x²) + Eps) ⊙ W, the statistics in float32 over the
// group (a whole row: Col 0, Groups 1, Width C; Qwen3's per-head q/k
// norm: the heads of the fused q/k/v row). Y may be X (in place); columns
// outside the groups are left alone. RStd (N×Groups) receives each group's
// 1/sqrt(mean(x²) + Eps).
//
// The backward reads X, W, RStd and DY (N×C, the same layout) and writes
// DX (which may be DY), or adds into it when AddDX; it adds Σ over rows of
// dy ⊙ x·rstd into DW.
type NormArgs struct {
	X, Y, W, RStd      Tensor
	Col, Groups, Width int
	Eps                float32

	DY, DX, DW Tensor
	AddDX      bool
}

func (a NormArgs) check(grad bool) {
	n := a.X.Rows
	if a.Width < 1 || a.Groups < 1 || a.Col < 0 || a.Col+a.Groups*a.Width > a.X.Cols || a.W.Len() != a.Width ||
		a.RStd.Len() != n*a.Groups {
		panic(fmt.Sprintf("gpu: rmsnorm of %d groups of %d at column %d over %d×%d (weight %d, rstd %d)",
			a.Groups, a.Width, a.Col, n, a.X.Cols, a.W.Len(), a.RStd.Len()))
	}
	same := func(t Tensor) bool { return t.Rows == n && t.Cols == a.X.Cols }
	if !grad && !same(a.Y) || grad && (!same(a.DY) || !same(a.DX) || a.DW.Len() != a.Width) {
		panic("gpu: rmsnorm operands differ in shape")
	}
}

// RopeArgs are the rotary embedding of Heads heads of HeadDim columns from
// column Col of each row of X, rotated in place by the angles of row i's
// position Pos[i], in transformers' rotate_half layout: for j < HeadDim/2,
// (x[j], x[j+HeadDim/2]) turns by Pos[i]·θ_j. Cos and Sin (at least
// max(Pos)+1 rows × HeadDim/2) tabulate cos and sin of p·θ_j. Inverse
// turns the other way (the backward).
type RopeArgs struct {
	X                   Tensor
	Col, Heads, HeadDim int
	Pos                 []int32
	Cos, Sin            Tensor
	Inverse             bool
}

func (a RopeArgs) check() {
	if a.HeadDim%2 != 0 || a.Col < 0 || a.Col+a.Heads*a.HeadDim > a.X.Cols || len(a.Pos) != a.X.Rows ||
		a.Cos.Cols != a.HeadDim/2 || a.Sin.Cols != a.HeadDim/2 || a.Sin.Rows != a.Cos.Rows {
		panic(fmt.Sprintf("gpu: rope of %d heads of %d at column %d over %d×%d with %d positions and %d×%d tables",
			a.Heads, a.HeadDim, a.Col, a.X.Rows, a.X.Cols, len(a.Pos), a.Cos.Rows, a.Cos.Cols))
	}
	for _, p := range a.Pos {
		if p < 0 || int(p) >= a.Cos.Rows {
			panic(fmt.Sprintf("gpu: rope position %d outside the %d tabulated", p, a.Cos.Rows))
		}
	}
}

// AttentionArgs are causal grouped-query attention over Batch sequences of
// Seq positions (N = Batch·Seq rows, sequence-major). Each row of QKV holds
// the row's Heads query heads, then its KVHeads key heads, then its value
// heads, HeadDim columns each. Query head h reads key/value head
// ⌊h·KVHeads/Heads⌋. Row i of a sequence attends to its rows j ≤ i whose
// Mask is 1 (nil: all), with scores q·k·Scale; a row whose Mask is 0
// outputs zeros. Out is N × Heads·HeadDim; LSE (N × Heads) receives each
// row's log-sum-exp of its scaled scores.
//
// The backward reads QKV, Out, LSE and DOut and overwrites DQKV (QKV's
// shape) with the gradients of the queries, keys and values.
type AttentionArgs struct {
	QKV, Out, LSE                       Tensor
	Mask                                []int32
	Batch, Seq, Heads, KVHeads, HeadDim int
	Scale                               float32

	DOut, DQKV Tensor
}

func (a AttentionArgs) check(grad bool) {
	n, w := a.Batch*a.Seq, (a.Heads+2*a.KVHeads)*a.HeadDim
	if a.KVHeads < 1 || a.Heads%a.KVHeads != 0 || a.QKV.Rows != n || a.QKV.Cols != w ||
		a.Out.Rows != n || a.Out.Cols != a.Heads*a.HeadDim || a.LSE.Len() != n*a.Heads ||
		a.Mask != nil && len(a.Mask) != n {
		panic(fmt.Sprintf("gpu: attention of %d×%d rows, %d/%d heads of %d over qkv %d×%d, out %d×%d, lse %d, mask %d",
			a.Batch, a.Seq, a.Heads, a.KVHeads, a.HeadDim, a.QKV.Rows, a.QKV.Cols, a.Out.Rows, a.Out.Cols, a.LSE.Len(), len(a.Mask)))
	}
	if grad && (a.DOut.Rows != n || a.DOut.Cols != a.Out.Cols || a.DQKV.Rows != n || a.DQKV.Cols != w) {
		panic("gpu: attention gradients differ in shape")
	}
}

// CacheArgs are attention over a KV cache: row i of QKV (laid out as in
// AttentionArgs) is a new token of the sequence in cache slot Slot[i] at
// position Pos[i]. Its key and value go into that slot's caches, then it
// attends to the slot's positions 0…Pos[i], so several new tokens of one
// sequence (a prompt) attend causally to each other. Out is N ×
// Heads·HeadDim. The caches hold one layer of Slots sequences of up to
// MaxLen tokens: VCache (Slots·MaxLen × KVHeads·HeadDim) a value per row,
// KCache (Slots·KVHeads·HeadDim × MaxLen) the keys transposed, row
// (slot·KVHeads + g)·HeadDim + c holding component c of key head g at every
// position, so that a query's scores are one product with it.
type CacheArgs struct {
	QKV, Out, KCache, VCache Tensor
	Slot, Pos                []int32
	MaxLen                   int
	Heads, KVHeads, HeadDim  int
	Scale                    float32
}

func (a CacheArgs) check() {
	n, kv := a.QKV.Rows, a.KVHeads*a.HeadDim
	if a.KVHeads < 1 || a.Heads%a.KVHeads != 0 || a.QKV.Cols != (a.Heads+2*a.KVHeads)*a.HeadDim || a.Out.Rows != n ||
		a.Out.Cols != a.Heads*a.HeadDim || len(a.Slot) != n || len(a.Pos) != n || a.MaxLen < 1 ||
		a.VCache.Cols != kv || a.VCache.Rows%a.MaxLen != 0 || a.KCache.Cols != a.MaxLen || a.KCache.Rows*a.MaxLen != a.VCache.Rows*kv {
		panic(fmt.Sprintf("gpu: cache attention of %d rows over qkv %d×%d, caches %d×%d and %d×%d", n, a.QKV.Rows, a.QKV.Cols,
			a.KCache.Rows, a.KCache.Cols, a.VCache.Rows, a.VCache.Cols))
	}
	slots := a.VCache.Rows / a.MaxLen
	for i := range a.Slot {
		if a.Slot[i] < 0 || int(a.Slot[i]) >= slots || a.Pos[i] < 0 || int(a.Pos[i]) >= a.MaxLen {
			panic(fmt.Sprintf("gpu: cache row %d: slot %d position %d outside %d slots of %d", i, a.Slot[i], a.Pos[i], slots, a.MaxLen))
		}
	}
}

// LogProbArgs are the log-probabilities of one target per row of Logits
// (M×V) under softmax(Logits·InvTemp): LogP (M×1) and, when Entropy has
// M elements (else it is skipped), each row's entropy. The backward reads
// Logits, Targets, DLogP and DEntropy (when given) and overwrites Logits
// with the gradient, so no second M×V buffer is needed.
type LogProbArgs struct {
	Logits          Tensor
	Targets         []int32
	LogP, Entropy   Tensor
	DLogP, DEntropy Tensor
	InvTemp         float32
}

func (a LogProbArgs) check(grad bool) {
	m := a.Logits.Rows
	if len(a.Targets) != m || a.LogP.Len() != m || a.Entropy.Len() != 0 && a.Entropy.Len() != m ||
		grad && (a.DLogP.Len() != m || a.DEntropy.Len() != 0 && a.DEntropy.Len() != m) {
		panic(fmt.Sprintf("gpu: log-probs of %d rows with %d targets, logp %d, entropy %d", m, len(a.Targets), a.LogP.Len(), a.Entropy.Len()))
	}
	for _, t := range a.Targets {
		if t < 0 || int(t) >= a.Logits.Cols {
			panic(fmt.Sprintf("gpu: target %d outside a vocabulary of %d", t, a.Logits.Cols))
		}
	}
}
