package trainer

import (
	"fmt"
	"math"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// runningStat is a running mean and variance per dimension, merged batch by
// batch (Chan et al.'s parallel algorithm), started at count 1e-4 as
// Gymnasium's RunningMeanStd is.
type runningStat struct {
	mean, variance []float64
	count          float64
	batchMean      []float64 // scratch
	batchVar       []float64
}

func newRunningStat(dim int) *runningStat {
	s := &runningStat{mean: make([]float64, dim), variance: make([]float64, dim), count: 1e-4,
		batchMean: make([]float64, dim), batchVar: make([]float64, dim)}
	for i := range s.variance {
		s.variance[i] = 1
	}
	return s
}

// update merges n rows of x (n×dim, row-major).
func (s *runningStat) update(x []float32, n int) {
	dim := len(s.mean)
	clear(s.batchMean)
	clear(s.batchVar)
	for r := 0; r < n; r++ {
		for j, v := range x[r*dim : (r+1)*dim] {
			s.batchMean[j] += float64(v)
		}
	}
	for j := range s.batchMean {
		s.batchMean[j] /= float64(n)
	}
	for r := 0; r < n; r++ {
		for j, v := range x[r*dim : (r+1)*dim] {
			d := float64(v) - s.batchMean[j]
			s.batchVar[j] += d * d
		}
	}
	total := s.count + float64(n)
	for j := range s.mean {
		bv := s.batchVar[j] / float64(n)
		delta := s.batchMean[j] - s.mean[j]
		m2 := s.variance[j]*s.count + bv*float64(n) + delta*delta*s.count*float64(n)/total
		s.mean[j] += delta * float64(n) / total
		s.variance[j] = m2 / total
	}
	s.count = total
}

func (s *runningStat) tensors(prefix string) []runstore.Tensor {
	f := func(xs []float64) []float32 {
		out := make([]float32, len(xs))
		for i, x := range xs {
			out[i] = float32(x)
		}
		return out
	}
	return []runstore.Tensor{
		{Name: prefix + ".mean", Shape: []int{len(s.mean)}, Data: f(s.mean)},
		{Name: prefix + ".var", Shape: []int{len(s.variance)}, Data: f(s.variance)},
	}
}

// load restores the statistics from a checkpoint; the count travels in the
// loop state because float32 cannot hold it exactly.
func (s *runningStat) load(tensors map[string]runstore.Tensor, prefix string, count float64) error {
	m, okm := tensors[prefix+".mean"]
	v, okv := tensors[prefix+".var"]
	if !okm || !okv || len(m.Data) != len(s.mean) || len(v.Data) != len(s.variance) {
		return fmt.Errorf("checkpoint lacks %s statistics of %d values", prefix, len(s.mean))
	}
	for i := range s.mean {
		s.mean[i], s.variance[i] = float64(m.Data[i]), float64(v.Data[i])
	}
	s.count = count
	return nil
}

// obsNormalizer standardises observations with running statistics and
// clips them (CleanRL's NormalizeObservation + clip for continuous control).
type obsNormalizer struct {
	stat *runningStat
	clip float64
}

// normalize writes the standardised rows of src into dst.
func (o *obsNormalizer) normalize(dst, src []float32, n int) {
	dim := len(o.stat.mean)
	for r := 0; r < n; r++ {
		for j := 0; j < dim; j++ {
			z := (float64(src[r*dim+j]) - o.stat.mean[j]) / math.Sqrt(o.stat.variance[j]+1e-8)
			dst[r*dim+j] = float32(math.Max(-o.clip, math.Min(o.clip, z)))
		}
	}
}

// rewardScaler divides rewards by the running standard deviation of the
// discounted return and clips them (Gymnasium's NormalizeReward: the return
// restarts only at termination).
type rewardScaler struct {
	stat    *runningStat
	returns []float64
	scratch []float32
	gamma   float64
	clip    float64
}

func newRewardScaler(nEnvs int, gamma, clip float64) *rewardScaler {
	return &rewardScaler{stat: newRunningStat(1), returns: make([]float64, nEnvs), scratch: make([]float32, nEnvs), gamma: gamma, clip: clip}
}

func (s *rewardScaler) scale(rewards []float32, terminated []bool) {
	for i, r := range rewards {
		keep := 1.0
		if terminated[i] {
			keep = 0
		}
		s.returns[i] = s.returns[i]*s.gamma*keep + float64(r)
		s.scratch[i] = float32(s.returns[i])
	}
	s.stat.update(s.scratch, len(rewards))
	sd := math.Sqrt(s.stat.variance[0] + 1e-8)
	for i, r := range rewards {
		rewards[i] = float32(math.Max(-s.clip, math.Min(s.clip, float64(r)/sd)))
	}
}
