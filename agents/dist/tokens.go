package dist

import (
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// Tokens is a language model's action distribution: at each position a
// categorical over the vocabulary, from the logits divided by the
// temperature (as verl and TRL score them). A row of the head's output is
// one position; an action is a token id. Rows that are not the policy's
// (the prompt, what an environment said) are masked out of the loss
// (gpu.PPOPolicyArgs.Mask).
//
// Everything here is plain Go on the host, the loss included (it downloads
// the logits and uploads their gradient): the reference that device
// kernels for tokens are held to, and what runs until they exist.
type Tokens struct {
	Vocab int
	// Temperature divides the logits before sampling and scoring; 1 when
	// not above 0.
	Temperature float64

	lp                        []float64 // scratch: one row's log-probabilities
	out, dOut, acts, old, adv []float32 // the loss's host copies
	mask, stats               []float32
}

// NewTokens is the distribution over a vocabulary of vocab tokens.
func NewTokens(vocab int, temperature float64) *Tokens {
	return &Tokens{Vocab: vocab, Temperature: temperature, lp: make([]float64, vocab)}
}

func (t *Tokens) temp() float64 {
	if t.Temperature > 0 {
		return t.Temperature
	}
	return 1
}

// Width implements Distribution: a logit per token of the vocabulary.
func (t *Tokens) Width() int { return t.Vocab }

// ActionDim implements Distribution: a token id.
func (t *Tokens) ActionDim() int { return 1 }

// Shared implements Distribution: none.
func (t *Tokens) Shared() int { return 0 }

// logProbs writes log softmax(row / T) into t.lp.
func (t *Tokens) logProbs(row []float32) []float64 {
	return t.logProbs64(len(row), func(k int) float64 { return float64(row[k]) })
}

// logProbs64 is logProbs of the n values at(k).
func (t *Tokens) logProbs64(n int, at func(k int) float64) []float64 {
	T := t.temp()
	mx := math.Inf(-1)
	for k := 0; k < n; k++ {
		mx = math.Max(mx, at(k)/T)
	}
	var se float64
	for k := 0; k < n; k++ {
		se += math.Exp(at(k)/T - mx)
	}
	lse := mx + math.Log(se)
	for k := 0; k < n; k++ {
		t.lp[k] = at(k)/T - lse
	}
	return t.lp
}

func (t *Tokens) row64(out []float64, i int) []float64 {
	V := t.Vocab
	row := out[i*V : (i+1)*V]
	return t.logProbs64(V, func(k int) float64 { return row[k] })
}

// Sample implements Distribution: one token per position, drawn with the
// temperature (deterministic: the most likely one), and its
// log-probability under the tempered distribution.
func (t *Tokens) Sample(out, _ []float32, rng *rand.Rand, deterministic bool, actions, logp []float32) {
	V := t.Vocab
	for i := 0; i < len(out)/V; i++ {
		lp := t.logProbs(out[i*V : (i+1)*V])
		choice := 0
		for k, x := range lp {
			if x > lp[choice] {
				choice = k
			}
		}
		if !deterministic {
			u := rng.Float64()
			choice = V - 1
			for k, x := range lp {
				if p := math.Exp(x); u < p {
					choice = k
					break
				} else {
					u -= p
				}
			}
		}
		actions[i], logp[i] = float32(choice), float32(lp[choice])
	}
}

// LogProb implements Distribution: the log-probabilities of given ids
// (what a rollout recorded), under the tempered distribution.
func (t *Tokens) LogProb(out, _ []float64, ids []float32, logp []float64) {
	for i := range logp {
		logp[i] = t.row64(out, i)[int(ids[i])]
	}
}

// Entropy implements Distribution: each position's entropy.
func (t *Tokens) Entropy(out, _, ent []float64) {
	for i := range ent {
		ent[i] = entropyOf(t.row64(out, i))
	}
}

func entropyOf(lp []float64) float64 {
	var h float64
	for _, x := range lp {
		h -= math.Exp(x) * x
	}
	return h
}

func (t *Tokens) entropy(row []float32) float64 { return entropyOf(t.logProbs(row)) }

// MaskedEntropy is the mean entropy over the positions mask marks (1),
// NaN when it marks none: the entropy TRL and verl log.
func (t *Tokens) MaskedEntropy(out, mask []float32) float64 {
	V := t.Vocab
	var sum float64
	n := 0
	for i, m := range mask {
		if m != 0 {
			sum += t.entropy(out[i*V : (i+1)*V])
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Loss implements Distribution: the clipped surrogate with an entropy
// bonus, averaged over the policy's tokens (verl's "token-mean"), with
// advantages normalised over them when asked. Masked-out rows get a zero
// gradient; the statistics are means over the policy's tokens.
func (t *Tokens) Loss(dev gpu.Device, p gpu.PPOPolicyArgs) {
	B, V := p.Out.Rows, t.Vocab
	t.out, t.dOut = fetch(dev, t.out, p.Out), grow32(t.dOut, B*V)
	t.acts, t.old, t.adv = fetch(dev, t.acts, p.Actions), fetch(dev, t.old, p.OldLogp), fetch(dev, t.adv, p.Adv)
	t.stats = fetch(dev, t.stats, p.Stats)
	t.mask = grow32(t.mask, B)
	if p.Mask.Rows > 0 {
		dev.Download(t.mask, p.Mask)
	} else {
		for i := range t.mask {
			t.mask[i] = 1
		}
	}
	var mean, inv float64 = 0, 1
	n := 0
	for i := 0; i < B; i++ {
		if t.mask[i] != 0 {
			mean += float64(t.adv[i])
			n++
		}
	}
	clear(t.dOut)
	if n == 0 {
		dev.Upload(p.DOut, t.dOut)
		return
	}
	if p.NormAdv {
		mean /= float64(n)
		var ss float64
		for i := 0; i < B; i++ {
			if t.mask[i] != 0 {
				ss += (float64(t.adv[i]) - mean) * (float64(t.adv[i]) - mean)
			}
		}
		std := 0.0
		if n > 1 {
			std = math.Sqrt(ss / float64(n-1)) // torch.std
		}
		inv = 1 / (std + 1e-8)
	} else {
		mean = 0
	}
	clip, ent, T := float64(p.ClipCoef), float64(p.EntCoef), t.temp()
	scale := 1 / (float64(n) * T) // the mean over tokens, and d(logits/T)/dlogits
	var sumPG, sumH, sumKL, sumClip float64
	for i := 0; i < B; i++ {
		if t.mask[i] == 0 {
			continue
		}
		row := t.out[i*V : (i+1)*V]
		lp := t.logProbs(row)
		var h float64
		for _, x := range lp {
			h -= math.Exp(x) * x
		}
		a := int(t.acts[i])
		logRatio := lp[a] - float64(t.old[i])
		ratio := math.Exp(logRatio)
		A := (float64(t.adv[i]) - mean) * inv
		pg1, pg2 := -A*ratio, -A*math.Min(math.Max(ratio, 1-clip), 1+clip)
		pg, dLogp := pg1, pg1 // d(−A·r)/dlogp = −A·r; the clipped branch is flat
		if pg2 > pg1 {
			pg, dLogp = pg2, 0
		}
		g := t.dOut[i*V : (i+1)*V]
		for k, x := range lp {
			pk := math.Exp(x)
			gk := -dLogp*pk + ent*pk*(x+h) // d(pg − ent·H)/dz_k
			if k == a {
				gk += dLogp
			}
			g[k] = float32(gk * scale)
		}
		sumPG += pg
		sumH += h
		sumKL += (ratio - 1) - logRatio
		if math.Abs(ratio-1) > clip {
			sumClip++
		}
	}
	dev.Upload(p.DOut, t.dOut)
	k := 1 / float64(n)
	t.stats[gpu.StatPolicyLoss] += float32(sumPG * k)
	t.stats[gpu.StatEntropy] += float32(sumH * k)
	t.stats[gpu.StatApproxKL] += float32(sumKL * k)
	t.stats[gpu.StatClipFrac] += float32(sumClip * k)
	dev.Upload(p.Stats, t.stats)
}

// fetch downloads src into buf, grown to fit.
func fetch(dev gpu.Device, buf []float32, src gpu.Tensor) []float32 {
	buf = grow32(buf, src.Len())
	dev.Download(buf, src)
	return buf
}

func grow32(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}
