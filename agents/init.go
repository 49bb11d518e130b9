package agents

import (
	"math"
	"math/rand/v2"
)

// orthogonal fills w (rows×cols, row-major) with a random orthogonal matrix
// scaled by gain, as torch.nn.init.orthogonal_: the Q of a Gaussian
// matrix's QR decomposition with R's diagonal made positive.
func orthogonal(w []float32, rows, cols int, gain float64, rng *rand.Rand) {
	// Orthonormalise the vectors along the longer side's complement: with
	// rows ≥ cols the columns are orthonormal, otherwise the rows.
	long, short := rows, cols
	if rows < cols {
		long, short = cols, rows
	}
	q := make([][]float64, short) // short vectors of length long
	for i := range q {
		q[i] = make([]float64, long)
		for j := range q[i] {
			q[i][j] = rng.NormFloat64()
		}
	}
	// Modified Gram-Schmidt: each vector loses its projections on the
	// earlier ones, then is normalised (R's diagonal comes out positive).
	for i := range q {
		for k := 0; k < i; k++ {
			var dot float64
			for j := range q[i] {
				dot += q[i][j] * q[k][j]
			}
			for j := range q[i] {
				q[i][j] -= dot * q[k][j]
			}
		}
		var norm float64
		for _, v := range q[i] {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		for j := range q[i] {
			q[i][j] /= norm
		}
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if rows >= cols {
				w[r*cols+c] = float32(gain * q[c][r]) // columns orthonormal
			} else {
				w[r*cols+c] = float32(gain * q[r][c]) // rows orthonormal
			}
		}
	}
}
